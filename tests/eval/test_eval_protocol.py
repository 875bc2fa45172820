"""``eval.protocol``: the authors' eval turns (release) against training's (paravt), driven by a
scripted backend so every request the episode sends can be read: the forced answer turn after the
third tool round with its text and token cap, the call cap of 5, no think prefix, the prompts."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from paravt.agent import EpisodeInput, EpisodeSettings, run_episode
from paravt.config import TrainConfig
from paravt.eval.benchmarks import release
from paravt.eval.benchmarks.base import EvalSample
from paravt.eval.benchmarks.protocol import Protocol, class_settings, episode_inputs
from paravt.models.base import GenOutput, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_processor
from paravt.protocol import prompts
from paravt.protocol.tags import render_answer, render_crop_call, render_tool_turn
from paravt.tools import build_toolset
from paravt.video import write_video
from paravt.video.draw import solid

SUB_ASK = prompts.subagent_summary_prompt(0, 1).splitlines()[-1]  # the summary request's line


class Scripted:
    """Main-agent requests get ``main`` in order, sub-agents a fixed summary; keeps every
    request."""

    def __init__(self, codec: ChatCodec, main: Sequence[str]) -> None:
        self.codec, self.main, self.requests = codec, list(main), []

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        outs = []
        for r in requests:
            is_sub = SUB_ASK in r.messages[-1].content or (
                r.messages[0].content == prompts.subagent_system_prompt()
            )
            if not is_sub:
                self.requests.append(r)
            text = "a grey scene" if is_sub else self.main.pop(0)
            ids = self.codec.encode_text(text) + (self.codec.im_end_id,)
            outs.append(GenOutput(ids, tuple(-0.5 for _ in ids), text, "stop"))
        return outs

    async def aclose(self) -> None:
        return None


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = Path(tmp_path_factory.mktemp("vid")) / "v.mp4"
    write_video(path, [solid(64, 64, (40 + 3 * i, 90, 120)) for i in range(40)], fps=2.0)  # 20 s
    return str(path)


@pytest.fixture(scope="module")
def codec(tiny_qwen3_dir: str) -> ChatCodec:
    return ChatCodec(load_processor(tiny_qwen3_dir))


BASE = EpisodeSettings(
    mode="parallel",
    overview_max_pixels=64 * 64,
    crop_max_pixels=64 * 64,
    crop_max_frames=4,
    sampling=SamplingParams(temperature=0.0, max_new_tokens=200),
    sub_sampling=SamplingParams(temperature=0.0, max_new_tokens=16),
)
PROTO = Protocol(fps=1.0, max_frames=64, max_pixels=64 * 64, prompt_class="agentic", scoring="lmms")


def _calls(*windows: tuple[float, float]) -> str:
    return render_tool_turn(
        "look", [render_crop_call(a, b) for a, b in windows], with_open_think=False
    )


def _run(video: str, codec: ChatCodec, texts: Sequence[str], settings: EpisodeSettings, task="mcq"):
    gen = Scripted(codec, texts)
    inp = EpisodeInput("q1", video, "What colour?", task, "B", ("A. red", "B. blue"), 4)
    res = asyncio.run(
        run_episode(
            inp,
            generator=gen,
            codec=codec,
            settings=settings,
            episode_id="e",
            tools=build_toolset(["crop_video"]),
        )
    )
    return res, gen.requests


def test_release_asks_for_the_letter_after_the_third_tool_round(video, codec) -> None:
    s = release.settings(BASE, "letter", ())
    rounds = [_calls((0, 2)), _calls((4, 6)), _calls((8, 10))]
    res, reqs = _run(video, codec, [*rounds, "B"], s)
    # 3 tool rounds (each run: one sub-agent summary each), then the forced turn: 4 generations
    assert len(reqs) == 4 and [len(t.calls) for t in res.main.turns] == [1, 1, 1, 0]
    last = reqs[3]
    assert last.messages[-1].role == "user"
    assert last.messages[-1].content == (
        "Based on the video and the cropped segments above, answer with ONLY the option letter."
    )
    assert last.messages[-2].role == "tool"  # the third round's results come first
    assert last.sampling.max_new_tokens == 64 and reqs[0].sampling.max_new_tokens == 200
    assert all(r.response_prefix == "" for r in reqs)  # no think prefix
    assert res.main.turns[-1].text == "B" and res.end_reason == "max_turns"
    # the release's opening: its agentic prompt, "letter only" after the options
    system, user = reqs[0].messages[0], reqs[0].messages[1]
    assert system.content == release.system_text("letter")
    assert "several <tool_call> blocks in one turn" in system.content
    assert '"name": "crop_video"' in system.content
    assert user.content.endswith("B. blue\nAnswer with the option letter only.")


def test_release_grounding_gets_its_own_forced_text_and_128_tokens(video, codec) -> None:
    s = release.settings(BASE, "interval", ())
    rounds = [_calls((0, 2)), _calls((4, 6)), _calls((8, 10))]
    _, reqs = _run(video, codec, [*rounds, "The event happens in the 4.0 - 6.0 seconds."], s, "tvg")
    assert reqs[3].sampling.max_new_tokens == 128
    assert reqs[3].messages[-1].content.startswith("Based on the video and any cropped segments")
    assert reqs[0].messages[0].content.startswith("# Tools")  # the bare function-calling envelope


def test_an_answer_before_the_third_round_ends_without_a_forced_turn(video, codec) -> None:
    s = release.settings(BASE, "letter", ())
    res, reqs = _run(
        video, codec, [_calls((0, 2)), render_answer("seen", "A", with_open_think=False)], s
    )
    assert len(reqs) == 2 and res.answer == "A" and res.end_reason == "answer"


def test_paravt_turns_stop_at_max_turns_with_no_forced_turn(video, codec) -> None:
    # eval's own rules (EpisodeSettings.from_config without training); max_turns counts the tool
    # rounds read, as the release counts them: 2 rounds, so 3 generations
    s = replace(BASE, max_turns=2, call_forms="per_call", turn_rules="paravt")
    rounds = [_calls((0, 2)), _calls((4, 6)), _calls((8, 10))]
    res, reqs = _run(video, codec, rounds, s)
    # 3 generations; the third turn's call never runs (no turn is left to read it)
    assert len(reqs) == 3 and [len(t.calls) for t in res.main.turns] == [1, 1, 0]
    assert res.end_reason == "max_turns"


SIX = [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10), (10, 12)]


def test_release_runs_five_calls_of_six_and_drops_the_sixth_unseen(video, codec) -> None:
    s = release.settings(BASE, "letter", ())
    res, reqs = _run(
        video, codec, [_calls(*SIX), render_answer("ok", "B", with_open_think=False)], s
    )
    assert [(c.start, c.end) for c in res.calls] == [(a * 1.0, b * 1.0) for a, b in SIX[:5]]
    assert len(res.subs) == 5 and all(c.ok for c in res.calls)
    tool_turn = reqs[1].messages[-1].content
    assert "[5]" in tool_turn and "[6]" not in tool_turn  # no error line for the sixth either


def test_release_keeps_no_minimum_window_and_no_de_duplication(video, codec) -> None:
    turn = _calls((0, 0.5), (4, 6), (4, 6))  # a half-second window, then one window twice
    rel, _ = _run(
        video,
        codec,
        [turn, render_answer("ok", "B", with_open_think=False)],
        release.settings(BASE, "letter", ()),
    )
    assert [c.ok for c in rel.calls] == [True, True, True] and len(rel.subs) == 3
    ours, _ = _run(video, codec, [turn, render_answer("ok", "B", with_open_think=False)], BASE)
    assert [c.ok for c in ours.calls] == [False, True, False]  # min_window_s 1, the repeat


def test_paravt_runs_all_six_calls_under_k_max_8(video, codec) -> None:
    res, _ = _run(
        video, codec, [_calls(*SIX), render_answer("ok", "B", with_open_think=False)], BASE
    )
    assert len(res.calls) == 6 and len(res.subs) == 6 and BASE.k_max == 8


def test_the_protocol_changes_only_the_agentic_class() -> None:
    rel, modes = class_settings(BASE, PROTO, ["parallel"], "letter")
    assert (rel.call_cap, rel.k_max, rel.max_turns, rel.think_prefix) == (5, 5, 3, False)
    assert (rel.turn_rules, rel.call_forms) == ("release", "per_call")
    assert rel.forced_answer == release.forced_answer("letter") and modes == ["parallel"]
    assert rel.sampling.temperature == 0.0 and rel.sub_sampling.temperature == 0.0
    ours, _ = class_settings(BASE, replace(PROTO, turns="paravt"), ["parallel"], "letter")
    assert ours.forced_answer is None and ours.call_cap is None and ours.system_text is None
    assert (ours.k_max, ours.max_turns, ours.think_prefix) == (8, 3, True)
    direct, _ = class_settings(BASE, replace(PROTO, prompt_class="direct"), ["parallel"])
    assert direct.forced_answer is None and direct.system_prompt is False
    assert TrainConfig().eval.protocol == "release"


def test_charades_asks_in_the_release_words_only_under_release(tmp_path: Path) -> None:
    sample = EvalSample(
        "c1",
        "charades_sta",
        str(tmp_path / "missing.mp4"),
        'When does "person opens a door" happen in the video?',
        "tvg",
        "[1.0, 2.0]",
        meta={"sentence": "person opens a door"},
    )
    (rel,) = episode_inputs([sample], PROTO, "interval")
    assert rel.question.endswith(
        'The sentence is: "person opens a door". Give its start time and end time.'
    )
    (ours,) = episode_inputs([sample], replace(PROTO, turns="paravt"), "interval")
    assert ours.question == sample.question
