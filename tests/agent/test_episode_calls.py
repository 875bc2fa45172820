"""Issue 46 items 3, 5, 10 and 12 through the real episode: which calls of a hand-made main turn
run (``rollout.call_forms``), what the episode does next, how many turns it plays
(``rollout.max_turns``), the per-turn rules (``rollout.turn_rules``) and kappa
(``n_successful_calls``), under both settings of each switch.

The generator stands in for the inference server (fixed main-agent texts, tokenized by the real
tiny tokenizer; every sub-agent answers "a grey scene"); the episode, parser, validation, tools,
video and sub-agent plumbing are real. The video is 20 s long.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from paravt.agent import EpisodeInput, EpisodeSettings, run_episode
from paravt.agent.result import EpisodeResult
from paravt.models.base import GenOutput, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_processor
from paravt.protocol.tags import render_answer, render_crop_call
from paravt.tools import build_toolset
from paravt.video import write_video
from paravt.video.draw import solid

Turn = str | tuple[str, str]  # a main-agent text, or (text, finish reason)


class Script:
    """Main-agent requests (``keep_kv``) get the scripted turns in order: a plain text ends on its
    end-of-turn token (``stop``), ``(text, "length")`` is a turn cut by the token budget (no
    end-of-turn token). Sub-agent requests get a summary. ``main_requests`` counts generations."""

    def __init__(self, codec: ChatCodec, turns: Sequence[Turn]) -> None:
        self.codec, self.turns = codec, list(turns)
        self.main_requests = self.sub_requests = 0

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        outs = []
        for r in requests:
            if r.keep_kv:
                self.main_requests += 1
                item = self.turns.pop(0)
                text, finish = item if isinstance(item, tuple) else (item, "stop")
            else:
                self.sub_requests += 1
                text, finish = "a grey scene", "stop"
            ids = self.codec.encode_text(text)
            ids += (self.codec.im_end_id,) if finish == "stop" else ()
            outs.append(GenOutput(ids, tuple(-0.5 for _ in ids), text, finish))  # type: ignore[arg-type]
        return outs

    async def aclose(self) -> None:
        return None


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = Path(tmp_path_factory.mktemp("calls")) / "v.mp4"
    write_video(path, [solid(64, 64, (40 + 3 * i, 90, 120)) for i in range(40)], fps=2.0)
    return str(path)


@pytest.fixture(scope="module")
def codec(tiny_qwen3_dir: str) -> ChatCodec:
    return ChatCodec(load_processor(tiny_qwen3_dir))


def _play(
    video: str, codec: ChatCodec, turns: Sequence[Turn], **kw
) -> tuple[EpisodeResult, Script]:
    settings = EpisodeSettings(
        **{
            "mode": "parallel",
            "overview_max_pixels": 64 * 64,
            "crop_max_pixels": 64 * 64,
            "crop_max_frames": 2,
            "sampling": SamplingParams(temperature=0.0, max_new_tokens=64),
            "sub_sampling": SamplingParams(temperature=0.0, max_new_tokens=8),
            **kw,
        }
    )
    script = Script(codec, turns)
    inp = EpisodeInput("q", video, "What colour flashes?", "mcq", "B", ("A. red", "B. blue"), 4)
    res = asyncio.run(
        run_episode(
            inp,
            generator=script,
            codec=codec,
            settings=settings,
            episode_id="calls",
            tools=build_toolset(["crop_video"]),
        )
    )
    assert not res.crashed, res.error
    return res, script


THINK = "I need to look.\n</think>\n"
ANSWER = render_answer("It is blue.", "B", with_open_think=False)
CROP_0_5, CROP_5_9 = render_crop_call(0, 5), render_crop_call(5, 9)
BROKEN = (
    '<tool_call>\n{"name": "crop_video", "arguments": {"start_time": 1, "end_time": }}\n'
    "</tool_call>"
)
PYCALL = "<tool_call>\ncrop_video(2, 7)\n</tool_call>"
CODE = "<tool_code>\ncrop_video(start_time=3, end_time=8)\n</tool_code>"


def _tool_turn_lines(res: EpisodeResult) -> list[list[str]]:
    """The tool turns the main agent read: each call's line."""
    return [[c.error or "ok" for c in t.calls] for t in res.main.turns if t.calls]


# ---- call_forms: what runs, what the episode does next, kappa ---------------------------------


def test_a_json_call_runs_under_both_forms(video: str, codec: ChatCodec) -> None:
    for forms in ("release", "per_call"):
        res, s = _play(video, codec, [THINK + CROP_0_5, ANSWER], call_forms=forms)
        assert (s.main_requests, s.sub_requests, res.n_successful_calls) == (2, 1, 1), forms
        assert res.end_reason == "answer" and res.answer == "B"


def test_one_malformed_block_ends_the_release_episode_and_is_an_error_line_per_call(
    video: str, codec: ChatCodec
) -> None:
    turn = THINK + CROP_0_5 + "\n" + BROKEN
    rel, s = _play(video, codec, [turn, ANSWER], call_forms="release")
    assert (s.main_requests, s.sub_requests, rel.n_successful_calls) == (1, 0, 0)
    assert rel.end_reason == "answer" and rel.calls == () and not rel.answered
    ours, s = _play(video, codec, [turn, ANSWER], call_forms="per_call")
    assert (s.main_requests, s.sub_requests, ours.n_successful_calls) == (2, 1, 1)
    assert [c.ok for c in ours.calls] == [True, False] and ours.answer == "B"


def test_a_trailing_unclosed_block(video: str, codec: ChatCodec) -> None:
    """Release: read only when the turn was cut before its end-of-turn token (its decoded text
    holds <|im_end|> otherwise); then it runs and the episode goes on. per_call: an error line
    after a finished turn; a cut turn ends the episode."""
    turn = THINK + CROP_0_5.removesuffix("</tool_call>")
    rel, s = _play(video, codec, [turn, ANSWER], call_forms="release")
    assert (s.main_requests, s.sub_requests, rel.n_successful_calls) == (1, 0, 0)
    rel, s = _play(video, codec, [(turn, "length"), ANSWER], call_forms="release")
    assert (s.main_requests, s.sub_requests, rel.n_successful_calls) == (2, 1, 1)
    assert rel.answer == "B" and rel.calls[0].ok
    ours, s = _play(video, codec, [turn, ANSWER], call_forms="per_call")
    assert (s.main_requests, s.sub_requests, ours.n_successful_calls) == (2, 0, 0)
    assert "unclosed" in _tool_turn_lines(ours)[0][0]
    ours, s = _play(video, codec, [(turn, "length"), ANSWER], call_forms="per_call")
    assert (s.main_requests, ours.end_reason, ours.n_successful_calls) == (1, "length", 0)


def test_a_python_style_call_inside_tool_call(video: str, codec: ChatCodec) -> None:
    rel, s = _play(video, codec, [THINK + PYCALL, ANSWER], call_forms="release")
    assert (s.main_requests, rel.n_successful_calls, rel.end_reason) == (1, 0, "answer")
    ours, s = _play(video, codec, [THINK + PYCALL, ANSWER], call_forms="per_call")
    assert (s.main_requests, ours.n_successful_calls) == (2, 1)
    assert (ours.calls[0].start, ours.calls[0].end) == (2.0, 7.0)


def test_a_tool_code_call_runs_and_counts_under_release_only(video: str, codec: ChatCodec) -> None:
    rel, s = _play(video, codec, [THINK + CODE, ANSWER], call_forms="release")
    assert (s.main_requests, s.sub_requests, rel.n_successful_calls) == (2, 1, 1)
    assert (rel.calls[0].start, rel.calls[0].end) == (3.0, 8.0) and rel.answer == "B"
    ours, s = _play(video, codec, [THINK + CODE, ANSWER], call_forms="per_call")
    assert (s.main_requests, ours.n_successful_calls, ours.end_reason) == (1, 0, "answer")


def test_a_turn_with_no_runnable_call_ends_release_and_shows_an_error_per_call(
    video: str, codec: ChatCodec
) -> None:
    rel, s = _play(video, codec, [THINK + BROKEN, ANSWER], call_forms="release")
    assert (s.main_requests, rel.end_reason, rel.calls) == (1, "answer", ())
    ours, s = _play(video, codec, [THINK + BROKEN, ANSWER], call_forms="per_call")
    assert (s.main_requests, ours.end_reason, ours.answer) == (2, "answer", "B")
    assert "not valid JSON" in _tool_turn_lines(ours)[0][0]


def test_a_release_call_that_fails_to_run_keeps_the_episode_going(
    video: str, codec: ChatCodec
) -> None:
    """A JSON call that reads but cannot run (a window after the end of the 20 s video) is a
    call: the turn ran tools, its error line is read, kappa does not count it."""
    late = render_crop_call(30, 40)
    rel, s = _play(video, codec, [THINK + late, ANSWER], call_forms="release")
    assert (s.main_requests, s.sub_requests, rel.n_successful_calls) == (2, 0, 0)
    assert "outside" in _tool_turn_lines(rel)[0][0]


# ---- max_turns and turn_rules: turns as the release counts, last-turn calls, kappa --------------


def test_max_turns_counts_tool_rounds_and_release_runs_the_last_turns_calls(
    video: str, codec: ChatCodec
) -> None:
    """max_turns=3 (the default): 4 generations, 3 tool rounds read; the 4th turn's call runs
    and counts under the release's rules (kappa 4), is not run under ours (kappa 3)."""
    calls = [THINK + render_crop_call(i, i + 4) for i in range(4)]
    assert EpisodeSettings().max_turns == 3
    rel, s = _play(video, codec, calls, turn_rules="release")
    assert (s.main_requests, s.sub_requests, rel.n_successful_calls) == (4, 4, 4)
    assert rel.end_reason == "max_turns" and len(_tool_turn_lines(rel)) == 4
    ours, s = _play(video, codec, calls, turn_rules="paravt")
    assert (s.main_requests, s.sub_requests, ours.n_successful_calls) == (4, 3, 3)
    assert ours.end_reason == "max_turns" and len(_tool_turn_lines(ours)) == 3
    # the same tokens: the release's fourth round is run and counted, never appended or read
    assert rel.main.ids == ours.main.ids and rel.main.loss_mask == ours.main.loss_mask


def test_a_tool_code_call_on_the_last_turn_counts_under_release(
    video: str, codec: ChatCodec
) -> None:
    rel, s = _play(
        video,
        codec,
        [THINK + CROP_0_5, THINK + CODE],
        max_turns=1,
        call_forms="release",
        turn_rules="release",
    )
    assert (s.main_requests, s.sub_requests, rel.n_successful_calls) == (2, 2, 2)
    assert [c.start for c in rel.calls] == [0.0, 3.0]


def test_turn_rules_cap_window_and_duplicates(video: str, codec: ChatCodec) -> None:
    """Five calls in one turn, k_max=2: 0-5, 0-5 again, 6-6.5 (half a second), 8-12, 12-16.
    Ours: the duplicate and the short window refused, 2 run, the fifth is beyond k_max. The
    release's RL: all five run."""
    windows = [(0, 5), (0, 5), (6, 6.5), (8, 12), (12, 16)]
    turn = THINK + "\n".join(render_crop_call(a, b) for a, b in windows)
    ours, s = _play(video, codec, [turn, ANSWER], turn_rules="paravt", k_max=2)
    assert s.sub_requests == 2 and ours.n_successful_calls == 2
    errors = _tool_turn_lines(ours)[0]
    assert errors[0] == "ok" and "duplicate" in errors[1] and "shorter" in errors[2]
    assert errors[3] == "ok" and "beyond k_max" in errors[4]
    rel, s = _play(video, codec, [turn, ANSWER], turn_rules="release", k_max=2)
    assert s.sub_requests == 5 and rel.n_successful_calls == 5
    assert _tool_turn_lines(rel)[0] == ["ok"] * 5


def test_sequential_keeps_one_call_a_turn_under_either_rules(video: str, codec: ChatCodec) -> None:
    turn = THINK + CROP_0_5 + "\n" + CROP_5_9
    for rules in ("release", "paravt"):
        res, _ = _play(video, codec, [turn, ANSWER], mode="sequential", turn_rules=rules)
        assert [c.ok for c in res.calls] == [True, False] and res.n_successful_calls == 1


def test_rl_reads_the_switches_and_eval_keeps_its_own() -> None:
    from paravt.config import TrainConfig

    cfg = TrainConfig()
    rl = EpisodeSettings.from_config(cfg, training=True)
    ev = EpisodeSettings.from_config(cfg)
    assert (rl.call_forms, rl.turn_rules, rl.max_turns, rl.max_generations) == (
        "release",
        "release",
        3,
        4,
    )
    assert (ev.call_forms, ev.turn_rules, ev.max_generations) == ("per_call", "paravt", 4)
    ours = cfg.model_copy(
        update={"rollout": cfg.rollout.model_copy(update={"call_forms": "per_call"})}
    )
    assert EpisodeSettings.from_config(ours, training=True).call_forms == "per_call"


def test_a_cut_turn_without_tools_ends_with_length_under_both_forms(
    video: str, codec: ChatCodec
) -> None:
    for forms in ("release", "per_call"):
        res, s = _play(video, codec, [(THINK + CROP_0_5, "length")], mode="none", call_forms=forms)
        assert (s.main_requests, res.end_reason, res.calls) == (1, "length", ()), forms


def test_a_forced_answer_comes_after_max_turns_tool_rounds(video: str, codec: ChatCodec) -> None:
    """The release's eval (eval.protocol=release) asks for the answer once max_turns tool rounds
    are read: the same count, so 3 rounds and the forced turn make 4 generations."""
    from paravt.agent.settings import ForcedAnswer

    calls = [THINK + render_crop_call(i, i + 4) for i in range(3)]
    forced = ForcedAnswer("Answer with the letter only.", 8)
    res, s = _play(video, codec, [*calls, "B"], forced_answer=forced, turn_rules="paravt")
    assert (s.main_requests, s.sub_requests, res.n_successful_calls) == (4, 3, 3)
    assert res.end_reason == "max_turns" and res.main.turns[-1].text.endswith("B")
