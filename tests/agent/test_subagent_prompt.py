"""What a sub-agent is asked, at which temperature, and how much of its reply the main agent reads
(issue 46, item 8): ``rollout.subagent_prompt`` (summary | question), ``sampling.sub_temperature``
and the cut at ``sampling.sub_max_new_tokens`` tokens with `` [truncated]``."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest
from test_episode import codec  # noqa: F401 - fixture

from paravt.agent import EpisodeSettings
from paravt.agent.subagents import TRUNCATED, SubagentAsk, SubagentCall, run_subagents
from paravt.config import TrainConfig
from paravt.errors import ConfigError
from paravt.models.base import GenOutput, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.protocol import prompts
from paravt.video.types import Frames

QUESTION = "What colour is the brief flash?"


def test_the_summary_prompt_has_no_question_and_the_window_in_mm_ss() -> None:
    system, user = prompts.subagent_messages("summary", QUESTION, 30.0, 62.5)
    assert system is None
    # 62.5 s rounds to 01:02 (half to even); the length is 62.5 − 30 = 32.5 s
    assert user.splitlines()[:2] == [
        "<video>",
        "These frames show the video from 00:30 to 01:02 (32.5 s).",
    ]
    assert "concise" in user and "summary" in user
    assert "colour" not in user and "flash" not in user and "Question" not in user
    # past an hour the window reads H:MM:SS
    assert "from 1:00:05 to 1:01:15 (70.0 s)" in prompts.subagent_summary_prompt(3605, 3675)


def test_the_question_prompt_keeps_the_question_and_its_system_prompt() -> None:
    system, user = prompts.subagent_messages("question", QUESTION, 30.0, 62.5)
    assert system == prompts.subagent_system_prompt()
    assert user.splitlines() == [
        "<video>",
        "Window 00:30-01:02 (30-62.5 s).",
        f"Question: {QUESTION}",
    ]
    with pytest.raises(ConfigError, match="use one of summary, question"):
        prompts.subagent_messages("both", QUESTION, 0, 1)  # type: ignore[arg-type]


class Recorder:
    """Returns ``reply`` (token ids, finish reason) to every request and keeps the requests."""

    def __init__(self, codec: ChatCodec, ids: Sequence[int], finish: str) -> None:
        self.codec, self.ids, self.finish = codec, tuple(ids), finish
        self.requests: list[GenRequest] = []

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        self.requests += requests
        text = self.codec.decode(self.ids)
        lp = tuple(-0.5 for _ in self.ids)
        return [GenOutput(self.ids, lp, text, self.finish) for _ in requests]  # type: ignore[arg-type]

    async def aclose(self) -> None:
        return None


def _job() -> SubagentCall:
    frames = Frames(np.zeros((2, 32, 32, 3), np.uint8), (30.5, 31.5))
    return SubagentCall(index=1, frames=frames, window=(30.0, 62.5))


def _ask(gen: Recorder, codec: ChatCodec, sampling: SamplingParams, prompt: str):
    return asyncio.run(
        run_subagents(
            [_job()],
            ask=SubagentAsk(QUESTION, prompt, "v2"),  # type: ignore[arg-type]
            generator=gen,
            codec=codec,
            sampling=sampling,
            timeout_s=10.0,
            episode_id="ep",
        )
    )


def test_the_request_carries_the_chosen_prompt(codec: ChatCodec) -> None:  # noqa: F811
    stop = codec.encode_text("Nothing brief appears.") + (codec.im_end_id,)
    for prompt, roles in (("summary", ("user",)), ("question", ("system", "user"))):
        gen = Recorder(codec, stop, "stop")
        (res,) = _ask(gen, codec, SamplingParams(max_new_tokens=8), prompt)
        (req,) = gen.requests
        assert tuple(m.role for m in req.messages) == roles
        assert (QUESTION in req.messages[-1].content) == (prompt == "question")
        (clip,) = req.messages[-1].videos  # the window's frames, nothing else
        assert clip.timestamps == (30.5, 31.5)
        assert res.summary == "Nothing brief appears."


def test_the_main_agent_reads_at_most_n_tokens_then_the_marker(codec: ChatCodec) -> None:  # noqa: F811
    head, tail = codec.encode_text("The flash"), codec.encode_text(" is red.")
    n = len(head)
    sampling = SamplingParams(max_new_tokens=n)
    # exactly N tokens then the stop token: read whole, no marker
    gen = Recorder(codec, head + (codec.im_end_id,), "stop")
    (res,) = _ask(gen, codec, sampling, "summary")
    assert res.summary == "The flash" and gen.requests[0].sampling.max_new_tokens == n + 1
    # N + 1 tokens and no stop: the reply went on, so it is cut to its first N tokens
    gen = Recorder(codec, head + tail[:1], "length")
    (res,) = _ask(gen, codec, sampling, "summary")
    assert res.summary == "The flash [truncated]" and TRUNCATED == " [truncated]"
    assert res.trajectory is not None and res.trajectory.n_sampled == n + 1  # all it sampled
    assert res.trajectory.end_reason == "length"


def test_sub_agents_sample_at_the_main_temperature_unless_told(codec: ChatCodec) -> None:  # noqa: F811
    cfg = TrainConfig()
    assert cfg.sampling.temperature == 0.7 and cfg.sampling.sub_temperature is None
    assert cfg.rollout.subagent_prompt == "summary"
    s = EpisodeSettings.from_config(cfg)
    assert (s.sampling.temperature, s.sub_sampling.temperature) == (0.7, 0.7)
    assert s.subagent_prompt == "summary" and s.sub_sampling.max_new_tokens == 512
    own = cfg.model_copy(
        update={"sampling": cfg.sampling.model_copy(update={"sub_temperature": 1.0})}
    )
    assert EpisodeSettings.from_config(own).sub_sampling.temperature == 1.0
    # an eval's (or a probe's) own temperature applies to both
    greedy = EpisodeSettings.from_config(own, temperature=0.0)
    assert (greedy.sampling.temperature, greedy.sub_sampling.temperature) == (0.0, 0.0)
    # the request carries the sub-agents' temperature
    gen = Recorder(codec, codec.encode_text("x") + (codec.im_end_id,), "stop")
    _ask(gen, codec, EpisodeSettings.from_config(own).sub_sampling, "summary")
    assert gen.requests[0].sampling.temperature == 1.0


def test_synthetic_sub_agent_rows_are_written_in_the_default_prompt() -> None:
    from paravt.data.rows import VideoPart
    from paravt.data.synth.oracle import sub_messages

    msgs = sub_messages(QUESTION, VideoPart("v.mp4", 30.0, 62.5, 4), "Nothing brief appears.")
    assert [m.role for m in msgs] == ["user", "assistant"]  # summary: no system prompt
    assert "from 00:30 to 01:02 (32.5 s)" in msgs[0].text and QUESTION not in msgs[0].text
