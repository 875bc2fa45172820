"""Sub-agents: one short generation per crop window, all windows of a turn in ONE batched request.

A sub-agent shares the policy's weights, sees the question and only its window's frames, and
returns a text summary (≤ ``sampling.max_new_tokens`` tokens; a summary cut by the limit ends with
``TRUNCATED``). Its trajectory belongs to the episode (same ``episode_id``) and is trained with the
episode's advantage when ``train_subagents`` is on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from paravt.agent.settings import derive_seed
from paravt.agent.trajectory import EndReason, Trajectory, TrajectoryBuilder, TurnRecord
from paravt.models.base import ChatMessage, Generator, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.protocol import prompts
from paravt.video.types import Frames

TRUNCATED = " [summary truncated]"


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


def _builder(
    job: SubagentCall, question: str, codec: ChatCodec, episode_id: str, index: int, version: str
) -> tuple[TrajectoryBuilder, tuple[ChatMessage, ...]]:
    start, end = job.window
    msgs = (
        ChatMessage("system", prompts.subagent_system_prompt(version=version)),
        ChatMessage(
            "user",
            prompts.subagent_user_prompt(question, start, end, version=version),
            videos=(job.frames,),
        ),
    )
    b = TrajectoryBuilder(episode_id, "sub", index)
    for m in msgs:
        enc = codec.encode_message(m)
        b.add_context(enc.ids, enc.videos, enc.images)
    b.add_context(codec.generation_prompt(""))
    return b, msgs


async def run_subagents(
    jobs: Sequence[SubagentCall],
    *,
    question: str,
    generator: Generator,
    codec: ChatCodec,
    sampling: SamplingParams,
    timeout_s: float,
    episode_id: str,
    first_index: int = 1,
    version: str = "v1",
) -> list[SubagentResult]:
    """Generate every job's summary in one batched request; failures are per job, as data."""
    built = [
        _builder(j, question, codec, episode_id, first_index + n, version)
        for n, j in enumerate(jobs)
    ]
    reqs = [
        GenRequest(
            tuple(b.ids),
            msgs,
            tuple(b.videos),
            (),
            derive_seed(sampling, episode_id, "sub", b.index),
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
        summary = out.text.strip() + (TRUNCATED if out.finish_reason == "length" else "")
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
