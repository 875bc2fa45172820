"""Sub-agents: one short generation per crop window, all windows of a turn in ONE batched request.

A sub-agent shares the policy's weights and sees only its window's frames, with the prompt of
``rollout.subagent_prompt`` (``prompts.subagent_messages``: a generic summary request by default,
or the question). Its summary is at most N = ``sampling.max_new_tokens`` tokens of its output: it
generates up to N + 1, and an output longer than N is cut to its first N tokens plus ``TRUNCATED``
(the authors' 512-token cut of a sub-agent's reply). Its trajectory belongs to the episode (same
``episode_id``) and is trained with the episode's advantage when ``train_subagents`` is on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from paravt.agent.settings import derive_seed
from paravt.agent.trajectory import EndReason, Trajectory, TrajectoryBuilder, TurnRecord
from paravt.config import SubagentPrompt
from paravt.models.base import ChatMessage, Generator, GenOutput, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.protocol import prompts
from paravt.video.types import Frames

TRUNCATED = " [truncated]"


@dataclass(frozen=True)
class SubagentCall:
    index: int  # position of the call in its turn (1-based)
    frames: Frames
    window: tuple[float, float]


@dataclass(frozen=True)
class SubagentResult:
    summary: str
    trajectory: Trajectory | None
    error: str | None = None
    backend_error: bool = False  # the inference backend failed (a timeout is not: it is data)


@dataclass(frozen=True)
class SubagentAsk:
    """What every sub-agent of a turn is asked: the episode's question (read only by the
    ``question`` prompt), which prompt, and the template version."""

    question: str
    prompt: SubagentPrompt
    version: str


def subagent_request_messages(job: SubagentCall, ask: SubagentAsk) -> tuple[ChatMessage, ...]:
    """The chat a sub-agent reads: its prompt (``prompts.subagent_messages``) with its window's
    frames as the user turn's video."""
    start, end = job.window
    system, user = prompts.subagent_messages(
        ask.prompt, ask.question, start, end, version=ask.version
    )
    head = () if system is None else (ChatMessage("system", system),)
    return (*head, ChatMessage("user", user, videos=(job.frames,)))


def summary_of(out: GenOutput, codec: ChatCodec, cap: int) -> str:
    """The text the main agent reads of a sub-agent's output: all of it when it holds at most
    ``cap`` tokens (its stop token not counted), else its first ``cap`` tokens + ``TRUNCATED``."""
    if out.finish_reason != "length" or len(out.token_ids) <= cap:
        return out.text.strip()
    return codec.decode(out.token_ids[:cap]).strip() + TRUNCATED


def _builder(
    job: SubagentCall, ask: SubagentAsk, codec: ChatCodec, episode_id: str, index: int
) -> tuple[TrajectoryBuilder, tuple[ChatMessage, ...]]:
    msgs = subagent_request_messages(job, ask)
    b = TrajectoryBuilder(episode_id, "sub", index)
    for m in msgs:
        enc = codec.encode_message(m)
        b.add_context(enc.ids, enc.videos, enc.images)
    b.add_context(codec.generation_prompt(""))
    return b, msgs


async def run_subagents(
    jobs: Sequence[SubagentCall],
    *,
    ask: SubagentAsk,
    generator: Generator,
    codec: ChatCodec,
    sampling: SamplingParams,
    timeout_s: float,
    episode_id: str,
    first_index: int = 1,
) -> list[SubagentResult]:
    """Generate every job's summary in one batched request; failures are per job, as data.
    ``sampling.max_new_tokens`` is the summary's cap N (the request asks for N + 1 tokens)."""
    built = [_builder(j, ask, codec, episode_id, first_index + n) for n, j in enumerate(jobs)]
    cap = sampling.max_new_tokens
    one_more = replace(sampling, max_new_tokens=cap + 1)
    reqs = [
        GenRequest(
            tuple(b.ids),
            msgs,
            tuple(b.videos),
            (),
            derive_seed(one_more, episode_id, "sub", b.index),
        )
        for b, msgs in built
    ]
    t0 = time.perf_counter()
    try:
        outs = await asyncio.wait_for(generator.generate(reqs), timeout=timeout_s)
    except TimeoutError:
        return [SubagentResult("", None, f"sub-agent timed out after {timeout_s:g}s") for _ in jobs]
    latency = time.perf_counter() - t0  # one batched request serves every window of the turn
    results = []
    for (b, _), out in zip(built, outs, strict=True):
        if out.finish_reason == "error":
            results.append(
                SubagentResult("", None, f"sub-agent failed: {out.error}", backend_error=True)
            )
            continue
        b.add_sampled(out.token_ids, out.logprobs)
        b.add_context(codec.close_turn(out.token_ids))
        summary = summary_of(out, codec, cap)
        b.turns.append(
            TurnRecord(
                out.text,
                out.finish_reason,
                latency_s=latency,
                n_prompt_tokens=b.prompt_len or 0,
                n_generated_tokens=len(out.token_ids),
            )
        )
        end: EndReason = "length" if out.finish_reason == "length" else "answer"
        results.append(SubagentResult(summary, b.freeze(end)))
    return results
