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
    assert "125 s (02:05)." in with_frames
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


@pytest.mark.parametrize("mode", ["parallel", "sequential", "eva"])
def test_v2_tool_prompts_are_the_papers_tools_always_json_only_no_repeat(mode: str) -> None:
    """v2 (the default) is the paper's RL system prompt: think, call in <tool_call> JSON, answer;
    never <tool_code> or Python syntax, never the same window twice, and no licence to skip."""
    text = P.system_prompt(mode)
    assert text == P.system_prompt(mode, version="v2")
    assert "<think></think>" in text and "tool_call block" in text
    assert "tool_response" in text and "<answer></answer>" in text
    assert "never <tool_code> or Python syntax" in text and "never the same window twice" in text
    assert "enough" not in text and "directly" not in text
    old = P.system_prompt(mode, version="v1")
    assert "<tool_code>" not in old and ("answer directly" in old or mode == "eva")


def test_v2_none_prompt_is_the_reasoning_prompt() -> None:
    text = P.system_prompt("none")
    assert "<think></think>" in text and "<answer></answer>" in text
    assert "tool" not in text and "crop" not in text


def test_v2_user_turn_does_not_state_the_frame_count_and_v1_still_does() -> None:
    v2 = P.user_prompt("What colour?", ["red", "blue"], duration=125, nframes=16)
    assert v2 == "<video>\nVideo: 125 s (02:05).\nQuestion: What colour?\nOptions:\nA. red\nB. blue"
    assert "16" not in v2 and "frames" not in v2
    v1 = P.user_prompt("What colour?", ["red", "blue"], duration=125, nframes=16, version="v1")
    assert "125 s (02:05), 16 frames shown." in v1
    on_demand = P.user_prompt("Q?", None, duration=62.5, nframes=0, fps=2.0, size=(160, 120))
    meta = "Video: 62.5 s (01:02), 2 fps, 160x120. No frames shown: use tools to look."
    assert on_demand == f"{meta}\nQuestion: Q?"


def test_the_default_version_is_the_configs_and_every_version_has_every_template() -> None:
    from paravt.config import TrainConfig

    assert TrainConfig().rollout.prompt_version == "v2" == P.system_prompt.__kwdefaults__["version"]
    for v in P.VERSIONS:
        for mode in ("parallel", "sequential", "eva", "none"):
            assert P.system_prompt(mode, version=v)  # type: ignore[arg-type]
        assert P.subagent_system_prompt(v) == P.subagent_system_prompt("v1")
        assert P.subagent_user_prompt("Q?", 3, 9, version=v).count("<video>") == 1


def test_the_episode_opening_honours_the_prompt_version() -> None:
    """The episode builds its system AND user turn in the settings' version (v1 one --set away)."""
    import numpy as np

    from paravt.agent.messages import opening_messages
    from paravt.agent.modes import MODES
    from paravt.agent.settings import EpisodeInput, EpisodeSettings
    from paravt.video.types import Frames, VideoInfo

    inp = EpisodeInput("q", "v.mp4", "What colour?", "oe", "red", nframes=4)
    info = VideoInfo("v.mp4", 120.0, 1.0, 120, 64, 64, "h264")
    overview = Frames(np.zeros((4, 64, 64, 3), np.uint8), (0.0, 30.0, 60.0, 90.0))
    for version, stated in (("v1", True), ("v2", False)):
        s = EpisodeSettings(prompt_version=version)
        system, user = opening_messages(
            inp, s, MODES["parallel"], (P.CROP_VIDEO_SPEC,), info, overview, None
        )
        assert system.content == P.system_prompt("parallel", (P.CROP_VIDEO_SPEC,), version=version)
        assert ("4 frames shown" in user.content) is stated
