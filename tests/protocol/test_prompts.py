import pytest

from paravt.errors import ConfigError
from paravt.protocol import prompts as P
from paravt.protocol.parser import parse_calls


@pytest.mark.parametrize("mode", ["parallel", "sequential", "eva"])
def test_tool_modes_show_the_spec_and_a_parseable_canonical_example(mode: str) -> None:
    text = P.system_prompt(mode)
    assert "crop_video" in text and '"required": ["start_time", "end_time"]' in text
    assert "examples" not in text  # schema examples feed the call example only
    (call,) = parse_calls(text).calls  # the example is the one tool_call in the prompt
    assert call.error is None and call.window == (30.0, 60.0)


def test_parallel_mode_states_k_max_disjoint_and_answer_tags() -> None:
    text = P.system_prompt("parallel", k_max=5)
    assert "up to 5 DISJOINT" in text and "<answer></answer>" in text and "<think>" in text


def test_direct_mode_has_no_tools() -> None:
    assert "tool_call" not in P.system_prompt("none")


def test_tool_section_is_generated_from_specs() -> None:
    spec = P.ToolSpec(
        "frame_select",
        "Pick frames.",
        {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    )
    text = P.system_prompt("sequential", [spec])
    assert (
        "- frame_select: Pick frames." in text
        and '{"name": "frame_select", "arguments": {"query": "..."}}' in text
    )


def test_user_prompt_has_one_video_marker_with_frames_and_none_on_demand() -> None:
    with_frames = P.user_prompt("What colour?", ["red", "B. blue"], duration=125, nframes=16)
    assert with_frames.count("<video>") == 1 and "A. red\nB. blue" in with_frames
    assert "125 s (02:05), 16 frames" in with_frames
    on_demand = P.user_prompt(
        "What colour?", None, duration=62.5, nframes=0, fps=2.0, size=(160, 120)
    )
    assert (
        "<video>" not in on_demand
        and "62.5 s" in on_demand
        and "2 fps" in on_demand
        and "160x120" in on_demand
    )


def test_subagent_and_observation_texts_have_one_marker_and_the_window() -> None:
    sub = P.subagent_user_prompt("What colour?", 30, 62.5)
    assert sub.count("<video>") == 1 and "00:30-01:02" in sub and "30-62.5 s" in sub
    obs = P.sequential_observation_text(30, 60)
    assert obs.count("<video>") == 1 and "00:30-01:00" in obs
    assert "<video>" not in P.subagent_system_prompt()


def test_unknown_version_or_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="v1"):
        P.system_prompt("parallel", version="v999")
    with pytest.raises(ConfigError):
        P.system_prompt("bogus")  # type: ignore[arg-type]


def test_prompts_are_short() -> None:
    assert len(P.system_prompt("parallel")) < 900  # ~250 tokens with the protocol tokenizer
