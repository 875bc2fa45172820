"""ParaVT's distillation (paper §B, "Gemini-CoT Distillation"), one row at a time.

1. The teacher runs our SEQUENTIAL protocol (system prompt ``sequential``, the row's overview
   frames): each turn is repaired (`repair.repair_turn`); a call's window is validated as it is
   made (`validate.window_reason`, the row stops at the first bad one) and then EXECUTED by our
   ``crop_video`` tool (`LocalToolSet`); its frames go back to the teacher. Only the first call
   of a turn runs (sequential protocol; extra calls are dropped, counted ``extra_calls``).
2. The final answer is validated (`validate.answer_verdict`) and written in canonical form.
3. For every executed window the teacher, prompted as our sub-agent (sub-agent system/user
   prompts, the window's frames), writes the summary; the summary goes into the tool message
   (``Message.summary``) and each window also becomes a sub-agent row (kind ``sub``).
4. `paravt.data.convert.convert_row` merges independent calls into parallel turns, summaries
   replacing frames. The result must pass `paravt.data.check.check_row` (reason ``check_<rule>``
   otherwise; the ``answer`` rule is waived with ``keep_incorrect``).

A refusal or failed request anywhere raises `TeacherGaveUp` (the caller retries the row on the
fallback teacher).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from paravt.config import SUBAGENT_PROMPT
from paravt.data.check import check_row
from paravt.data.convert import convert_row
from paravt.data.rows import Message, SFTRow, VideoPart
from paravt.distill.job import (
    Outcome,
    RowCounters,
    RowJob,
    ask,
    observation_message,
    result_line,
    split_marker,
    teacher_turn,
    tool_context,
)
from paravt.distill.teacher import ChatMsg, TeacherClient, content
from paravt.distill.validate import answer_verdict, canonical_answer, window_reason
from paravt.protocol import prompts
from paravt.tools.crop import CropVideo
from paravt.tools.toolset import LocalToolSet
from paravt.video.types import Frames

TOOLS = frozenset({"crop_video"})


@dataclass(frozen=True)
class ParavtSettings:
    max_turns: int = 4
    crop_max_frames: int = 16
    crop_fps: float = 1.0
    crop_max_pixels: int = 224 * 224
    size_factor: int = 32
    keep_incorrect: bool = False
    llm_cleanup: bool = True
    k_max: int = 8
    summary_max_tokens: int = 256


@dataclass(frozen=True)
class Crop:
    start: float
    end: float
    frames: Frames


def opening(job: RowJob) -> tuple[list[Message], list[ChatMsg]]:
    """(stored messages, teacher messages) of the first two turns."""
    e = job.extra
    system = prompts.system_prompt("sequential", (prompts.CROP_VIDEO_SPEC,))
    user = prompts.user_prompt(
        e.question,
        e.options,
        duration=job.info.duration,
        nframes=e.nframes,
        fps=job.info.fps,
        size=(job.info.width, job.info.height),
    )
    stored_user: Message
    if job.overview is not None:
        stored_user = Message(
            "user", split_marker(user, VideoPart(job.rel, 0.0, float(e.duration), e.nframes))
        )
        api_user = content(user, (job.overview,))
    else:
        stored_user, api_user = Message("user", user), user
    return [Message("system", system), stored_user], [
        {"role": "system", "content": system},
        {"role": "user", "content": api_user},
    ]


async def distill_paravt(
    job: RowJob, teacher: TeacherClient, s: ParavtSettings, tally: RowCounters
) -> Outcome:
    e = job.extra
    stored, api = opening(job)
    crops: list[Crop] = []
    tools = LocalToolSet([CropVideo()])
    ctx = tool_context(
        job,
        crop_max_frames=s.crop_max_frames,
        crop_fps=s.crop_fps,
        crop_max_pixels=s.crop_max_pixels,
        size_factor=s.size_factor,
    )
    for _ in range(s.max_turns):
        turn = await teacher_turn(teacher, api, TOOLS, tally, llm_cleanup=s.llm_cleanup)
        if turn.error is not None:
            return Outcome(reason="unrepairable", detail=turn.error)
        if not turn.calls:
            verdict = answer_verdict(
                turn.answer,
                task=e.task,
                gold=e.answer,
                options=e.options,
                keep_incorrect=s.keep_incorrect,
            )
            if verdict.reason is not None:
                return Outcome(
                    reason=verdict.reason, detail=f"answer {turn.answer!r}, gold {e.answer!r}"
                )
            final = replace(turn, answer=canonical_answer(turn.answer or "", e.task, e.options))
            stored.append(Message("assistant", final.render()))
            return await _finish(job, teacher, s, tally, stored, crops)
        if len(turn.calls) > 1:
            tally.repairs["extra_calls"] += 1
            turn = replace(turn, calls=turn.calls[:1])
        call = turn.calls[0]
        start, end = float(call.arguments["start_time"]), float(call.arguments["end_time"])
        why = window_reason(start, end, job.info.duration)
        if why is not None:
            return Outcome(
                reason=why, detail=f"window {start:g}-{end:g} s of a {job.info.duration:g} s video"
            )
        obs = await tools.run_one(ctx, call.name, dict(call.arguments))
        if obs.error is not None or obs.frames is None or obs.window is None:
            return Outcome(reason="tool_error", detail=str(obs.error))
        ws, we = obs.window
        line = result_line(obs, ws, we)
        stored.append(Message("assistant", turn.render()))
        stored.append(
            Message("tool", split_marker(line, VideoPart(job.rel, ws, we, len(obs.frames))))
        )
        api.append({"role": "assistant", "content": turn.render()})
        api.append(observation_message(line, obs.frames))
        crops.append(Crop(ws, we, obs.frames))
    return Outcome(reason="max_turns", detail=f"no answer after {s.max_turns} turns")


async def _summaries(
    job: RowJob, teacher: TeacherClient, crops: list[Crop], s: ParavtSettings, tally: RowCounters
) -> list[str]:
    out = []
    for c in crops:
        # the teacher is told the question (a summary the trace can use); the sub-agent's own
        # row is written in the default sub-agent prompt (`_sub_row`), as it will be asked
        user = prompts.subagent_user_prompt(job.extra.question, c.start, c.end)
        msgs: list[ChatMsg] = [
            {"role": "system", "content": prompts.subagent_system_prompt()},
            {"role": "user", "content": content(user, (c.frames,))},
        ]
        reply = await ask(teacher, msgs, tally, max_tokens=s.summary_max_tokens)
        out.append(
            " ".join(reply.text.replace("<", "‹").split())
            or "Nothing relevant appears in this window."
        )
    return out


async def _finish(
    job: RowJob,
    teacher: TeacherClient,
    s: ParavtSettings,
    tally: RowCounters,
    stored: list[Message],
    crops: list[Crop],
) -> Outcome:
    summaries = await _summaries(job, teacher, crops, s, tally)
    k = 0
    for i, m in enumerate(stored):
        if m.role == "tool":
            stored[i] = replace(m, summary=summaries[k])
            k += 1
    seq = SFTRow(
        f"{job.row.id}-distill", "main", "sequential", tuple(stored), (job.rel,), job.extra
    )
    par, _, merges = convert_row(seq, k_max=s.k_max)
    par = replace(par, id=seq.id)
    tally.merges += merges
    subs = [
        _sub_row(job, c, summary, i)
        for i, (c, summary) in enumerate(zip(crops, summaries), start=1)
    ]
    for r in (par, *subs):
        bad = [
            v for v in check_row(r, k_max=s.k_max) if not (s.keep_incorrect and v.rule == "answer")
        ]
        if bad:
            return Outcome(reason=f"check_{bad[0].rule}", detail=bad[0].detail)
    return Outcome(rows=(par, *subs))


def _sub_row(job: RowJob, c: Crop, summary: str, index: int) -> SFTRow:
    """A sub-agent row in the default sub-agent prompt (``SUBAGENT_PROMPT``)."""
    system, user = prompts.subagent_messages(SUBAGENT_PROMPT, job.extra.question, c.start, c.end)
    part = VideoPart(job.rel, c.start, c.end, len(c.frames))
    head = () if system is None else (Message("system", system),)
    msgs = (*head, Message("user", split_marker(user, part)), Message("assistant", summary))
    return SFTRow(f"{job.row.id}-distill-sub{index}", "sub", "sub", msgs, (job.rel,), job.extra)
