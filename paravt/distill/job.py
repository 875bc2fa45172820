"""What both pipelines share: one row's job (video, overview, tools), its outcome, the
``<tool_response>`` message sent back to the teacher, and a repaired teacher turn (with the
optional LLM cleanup).

The teacher gets observations as a USER message wrapped in ``<tool_response>`` tags, not as a
``tool`` message: hosted APIs reject a ``tool`` message without a matching native ``tool_calls``
entry and reject images in tool messages; a user message with frames works on every
OpenAI-compatible server.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from paravt.data.rows import Part, Row, SFTRow, TextPart, VideoPart
from paravt.distill.repair import RepairedTurn, repair_turn
from paravt.distill.teacher import ChatMsg, TeacherClient, TeacherReply, content
from paravt.errors import DataError
from paravt.protocol import tags as T
from paravt.tools.base import Observation, ToolContext
from paravt.video import probe, sample_frames
from paravt.video.types import Frames, VideoInfo

CLEANUP_PROMPT = (
    "Rewrite the text below so that it follows this format exactly: first <think>...</think>, then "
    'either tool calls, each as <tool_call>{"name": ..., "arguments": {...}}</tool_call> with '
    "strict JSON, or one <answer>...</answer>. Keep the content; change only the format. Output "
    "only "
    "the rewritten text.\n\n"
)


class TeacherGaveUp(Exception):
    """The teacher refused or its request failed: the row goes to the fallback teacher."""

    def __init__(self, reply: TeacherReply) -> None:
        super().__init__(reply.error or "refused")
        self.reply = reply


@dataclass
class RowCounters:
    """Counters of one row's attempt (merged into the run's report)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    retries: int = 0
    repairs: Counter = field(default_factory=Counter)
    reflector: Counter = field(default_factory=Counter)
    merges: int = 0

    def add(self, reply: TeacherReply) -> None:
        self.requests += 1
        self.retries += reply.retries
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens


@dataclass(frozen=True)
class Outcome:
    rows: tuple[SFTRow, ...] = ()
    reason: str | None = None  # None = accepted
    detail: str = ""


@dataclass(frozen=True)
class RowJob:
    row: Row
    rel: str  # the video path as the row gives it (relative to the data root)
    video: str  # absolute path
    info: VideoInfo
    overview: Frames | None

    @property
    def extra(self):  # noqa: ANN201 - ExtraInfo
        return self.row.extra_info


async def open_job(
    row: Row, root: str | Path, *, overview_max_pixels: int, size_factor: int
) -> RowJob:
    if not row.videos:
        raise DataError(f"row {row.id} has no video; distillation needs one video per row")
    rel = row.videos[0]
    path = Path(rel) if Path(rel).is_absolute() else Path(root) / rel
    info = await asyncio.to_thread(probe, path)
    n = row.extra_info.nframes
    overview = None
    if n > 0:
        overview = await asyncio.to_thread(
            sample_frames,
            path,
            0.0,
            info.duration,
            nframes=n,
            max_pixels=overview_max_pixels,
            size_factor=size_factor,
        )
    return RowJob(row, rel, str(path), info, overview)


def tool_context(
    job: RowJob, *, crop_max_frames: int, crop_fps: float, crop_max_pixels: int, size_factor: int
) -> ToolContext:
    return ToolContext(
        episode_id=job.row.id,
        video=job.video,
        info=job.info,
        crop_max_frames=crop_max_frames,
        crop_fps=crop_fps,
        crop_max_pixels=crop_max_pixels,
        size_factor=size_factor,
    )


def result_line(obs: Observation, start: float, end: float) -> str:
    """The one result line of a sequential tool turn, as the episode composes it."""
    body = T.with_media_marker(obs.text) if obs.frames is not None else obs.text
    return T.render_tool_response_body([T.render_result_line(1, start, end, body)])


def split_marker(text: str, part: VideoPart) -> tuple[Part, ...]:
    before, _, after = text.partition("<video>")
    return tuple(
        p
        for p in (TextPart(before) if before else None, part, TextPart(after) if after else None)
        if p
    )


def observation_message(line: str, frames: Frames | None) -> ChatMsg:
    text = f"{T.TOOL_RESPONSE_OPEN}\n{line}\n{T.TOOL_RESPONSE_CLOSE}"
    return {
        "role": "user",
        "content": content(text, (frames,) if frames is not None and "<video>" in text else ()),
    }


async def ask(
    teacher: TeacherClient,
    messages: list[ChatMsg],
    tally: RowCounters,
    *,
    max_tokens: int | None = None,
) -> TeacherReply:
    reply = await teacher.chat(messages, max_tokens=max_tokens)
    tally.add(reply)
    if not reply.ok:
        raise TeacherGaveUp(reply)
    return reply


async def teacher_turn(
    teacher: TeacherClient,
    messages: list[ChatMsg],
    tools: frozenset[str],
    tally: RowCounters,
    *,
    llm_cleanup: bool,
) -> RepairedTurn:
    """One teacher turn, repaired; an unrepairable one goes through the LLM cleanup once."""
    reply = await ask(teacher, messages, tally)
    turn = repair_turn(reply.text, tools)
    if turn.error is not None and llm_cleanup:
        fixed = await ask(
            teacher, [{"role": "user", "content": CLEANUP_PROMPT + reply.text}], tally
        )
        turn = repair_turn(fixed.text, tools)
        if turn.error is None:
            tally.repairs["llm_cleanup"] += 1
    tally.repairs.update(turn.changes)
    return turn
