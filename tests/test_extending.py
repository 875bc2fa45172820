"""docs/extending.md holds: a toy tool, a toy reward term and a toy dispatch mode, each added in
the one place the doc names (``register_tool``, ``TERMS``, ``MODES``), run through a real episode
and ``episode_reward``, then removed again. (The toy benchmark is tested in tests/eval.)"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from paravt.agent import EpisodeInput, EpisodeResult, EpisodeSettings, episode_reward, run_episode
from paravt.agent.modes import MODES, Dispatched, DispatchMode, EpisodeView
from paravt.eval.tokens import reinjects_frames
from paravt.models.base import GenOutput, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_processor
from paravt.protocol.prompts import ToolSpec
from paravt.protocol.tags import render_answer, render_tool_call, render_tool_turn
from paravt.rewards import RewardWeights, composite, terms
from paravt.tools import (
    Observation,
    ToolContext,
    available_tools,
    build_toolset,
    register_tool,
    unregister_tool,
)
from paravt.video import write_video
from paravt.video.draw import solid


class ToyAdd:
    """A tool: adds two numbers (positional calls map by its spec: ``toy_add(3, 9)`` → a=3, b=9)."""

    name = "toy_add"
    spec = ToolSpec(
        "toy_add",
        "Add two numbers.",
        {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    )
    timeout_s = 5.0

    async def run(self, ctx: ToolContext, args: Mapping[str, Any]) -> Observation:
        return Observation(text=f"sum {args['a'] + args['b']:g}")


class ToyShout(DispatchMode):
    """A dispatch mode: at most two calls a turn, the observations come back upper-cased."""

    name, prompt, reinjects_frames = "toy_shout", "parallel", False

    def call_limit(self, k_max: int | None) -> int | None:
        return 2  # its own cap, under either rollout.turn_rules

    async def deliver(self, run: EpisodeView, obs: Sequence[Observation]) -> Dispatched:
        return Dispatched(tuple(replace(o, text=o.text.upper()) for o in obs))


#: A reward term: 0.25 per tool call that ran.
TOY_TERM = terms.Term("toy_calls", lambda x, w: float(x.successful_calls or 0), lambda w: 0.25)

TURN1 = render_tool_turn(
    "Add twice.",
    [
        "<tool_call>toy_add(3, 9)</tool_call>",
        render_tool_call("toy_add", {"a": 1, "b": 2}),
        "<tool_call>toy_add(5, 5)</tool_call>",  # beyond the mode's call limit
    ],
    with_open_think=False,
)
TURN2 = render_answer("Both sums are in.", "A", with_open_think=False)


class Scripted:
    """The main agent's two turns, in order (the toy mode starts no sub-agent)."""

    def __init__(self, codec: ChatCodec) -> None:
        self.codec, self.texts = codec, [TURN1, TURN2]

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        outs = []
        for _ in requests:
            text = self.texts.pop(0)
            ids = self.codec.encode_text(text) + (self.codec.im_end_id,)
            outs.append(GenOutput(ids, tuple(-0.5 for _ in ids), text, "stop"))
        return outs

    async def aclose(self) -> None:
        return None


@pytest.fixture
def toys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    register_tool(ToyAdd.name, ToyAdd)
    monkeypatch.setitem(MODES, ToyShout.name, ToyShout())
    with_toy = (*terms.TERMS, TOY_TERM)  # one more line in TERMS, as compute_reward reads it
    for module in (terms, composite):
        monkeypatch.setattr(module, "TERMS", with_toy)
    try:
        yield
    finally:
        unregister_tool(ToyAdd.name)


def _episode(video: str, codec: ChatCodec) -> EpisodeResult:
    settings = EpisodeSettings(
        mode="toy_shout",  # type: ignore[arg-type]
        call_forms="per_call",  # python-style calls inside <tool_call> run (docs/tools.md)
        overview_max_pixels=64 * 64,
        sampling=SamplingParams(temperature=0.0, max_new_tokens=128),
    )
    inp = EpisodeInput("toy", video, "Which colour?", "mcq", "A", ("A. teal", "B. red"), 2)
    return asyncio.run(
        run_episode(
            inp,
            generator=Scripted(codec),
            codec=codec,
            settings=settings,
            episode_id="toy",
            tools=build_toolset(["crop_video", ToyAdd.name]),
        )
    )


def test_a_toy_tool_term_and_mode_plug_in_where_the_doc_says(
    toys: None, tmp_path: Path, tiny_qwen3_dir: str
) -> None:
    video = tmp_path / "v.mp4"
    write_video(video, [solid(64, 64, (20, 120, 120)) for _ in range(8)], fps=2.0)
    codec = ChatCodec(load_processor(tiny_qwen3_dir))
    res = _episode(str(video), codec)
    # the tool ran twice (positional and JSON arguments alike); the mode capped the turn at two
    # calls and upper-cased what came back; no sub-agent was started
    assert [(c.name, c.ok, c.summary) for c in res.calls] == [
        ("toy_add", True, "SUM 12"),
        ("toy_add", True, "SUM 3"),
        ("toy_add", False, ""),
    ]
    assert res.calls[2].error == "beyond k_max: only 2 calls run per turn"
    assert res.answer == "A" and res.subs == () and res.n_successful_calls == 2
    assert reinjects_frames("toy_shout") is False  # the token model reads the mode class
    w = RewardWeights.default()
    scored = episode_reward(res, w)
    assert scored.terms["toy_calls"] == 2.0
    with pytest.MonkeyPatch.context() as mp:  # the same episode without the toy term
        for module in (terms, composite):
            mp.setattr(module, "TERMS", tuple(t for t in terms.TERMS if t.name != "toy_calls"))
        plain = episode_reward(res, w)
    assert dict(scored.terms) == {**plain.terms, "toy_calls": 2.0}
    assert scored.reward == pytest.approx(plain.reward + 0.25 * 2)


def test_the_toys_are_gone_after_the_test() -> None:
    assert ToyAdd.name not in available_tools() and ToyShout.name not in MODES
    assert "toy_calls" not in terms.TERM_NAMES and all(
        t.name != "toy_calls" for t in composite.TERMS
    )


def test_the_report_plots_every_reward_term() -> None:
    from paravt.report.plots import TRAIN_METRICS

    assert [k for k in TRAIN_METRICS if k.startswith("reward/") and k[7:] in terms.TERM_NAMES] == [
        f"reward/{name}" for name in terms.TERM_NAMES
    ]  # acc, format, tool: the registry's order
