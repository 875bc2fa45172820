"""EVA's data pipeline (EVA Appendix 1.2, Figures 2 and 4), one row at a time.

Executor: the teacher with EVA's plan-before-perception system prompt (``prompts.system_prompt(
"eva")`` with ``frame_select``), the question and the video's metadata but NO frames; the top-k
most similar successful trajectories of the Experience Bank (`bank.ExperienceBank`, BM25 over the
question) are appended to the TEACHER's system prompt as examples (the stored row keeps the plain
prompt: the examples are guidance for distillation, not part of the task).
Each round: the Executor's turn is repaired; its ``frame_select`` proposal goes to the Reflector:
the deterministic rules (`reflector.reflect`) first, then, when a reflector endpoint is given, an
LLM reflector that answers ``NO_CHANGE`` or a corrected JSON call (its correction passes the
deterministic rules again, so their invariants hold); the CORRECTED call is what is executed (our
``frame_select`` tool, with its visual budget) and what the trace records. Then the next round.
A correct answer (validated like the ParaVT pipeline) stores the trajectory in the bank.
Rows: kind ``main``, mode ``sequential``, the EVA system prompt (prompt style ``eva``),
``extra_info.source == "distill-eva"``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from paravt.data.check import check_row
from paravt.data.rows import Message, SFTRow, VideoPart
from paravt.distill.bank import Experience, ExperienceBank
from paravt.distill.job import (
    Outcome,
    RowCounters,
    RowJob,
    observation_message,
    result_line,
    split_marker,
    teacher_turn,
    tool_context,
)
from paravt.distill.reflector import FrameCall, Reflection, max_resize_for, reflect
from paravt.distill.repair import CanonicalCall, RepairedTurn, canonical_args
from paravt.distill.teacher import ChatMsg, TeacherClient
from paravt.distill.validate import answer_verdict, canonical_answer, window_reason
from paravt.protocol import prompts
from paravt.protocol.prompts import FRAME_SELECT_SPEC
from paravt.tools.frame_select import FrameSelect
from paravt.tools.toolset import LocalToolSet

TOOLS = frozenset({"frame_select"})
REFLECTOR_PROMPT = (
    "You audit a video agent's frame_select call before it runs. Rules: if a global scan found "
    "nothing, "
    "do not pick a random segment: rescan globally with resize >= 0.5 and at least 3x the "
    "frames, fps <= 1; "
    "never densely sample (1 fps) a segment twice, widen instead; raise a visual budget (nframes "
    "x resize) "
    "below 15; keep fps <= 1. Reply NO_CHANGE, or only the corrected call as JSON "
    '{"start_time": s, "end_time": e, "nframes": n, "resize": r}.\n\n'
)
_JSON_RE = re.compile(r"\{.*\}", re.S)


@dataclass(frozen=True)
class EvaSettings:
    max_turns: int = 5
    size_factor: int = 32
    keep_incorrect: bool = False
    llm_cleanup: bool = True
    top_k: int = 2


async def distill_eva(
    job: RowJob,
    teacher: TeacherClient,
    s: EvaSettings,
    tally: RowCounters,
    bank: ExperienceBank,
    reflector: TeacherClient | None = None,
) -> Outcome:
    stored, api = _opening(job, s, bank)
    tools = LocalToolSet([FrameSelect()])
    ctx = tool_context(
        job, crop_max_frames=16, crop_fps=1.0, crop_max_pixels=224 * 224, size_factor=s.size_factor
    )
    history: list[FrameCall] = []
    plan = ""
    for _ in range(s.max_turns):
        turn = await teacher_turn(teacher, api, TOOLS, tally, llm_cleanup=s.llm_cleanup)
        if turn.error is not None:
            return Outcome(reason="unrepairable", detail=turn.error)
        plan = plan or turn.think
        if not turn.calls:
            return _answered(job, turn, stored, history, plan, s, bank)
        if len(turn.calls) > 1:
            tally.repairs["extra_calls"] += 1
        proposal = _checked_proposal(turn, job)
        if isinstance(proposal, Outcome):
            return proposal
        refl = await _reflect(
            proposal,
            history,
            job.info.duration,
            turn.think,
            reflector,
            tally,
            max_resize_for(job.info.width, job.info.height, ctx.budget.per_call_pixels),
        )
        tally.reflector.update(refl.fired or ("no_change",))
        call = CanonicalCall("frame_select", canonical_args("frame_select", refl.call.arguments()))
        turn = replace(turn, calls=(call,))
        obs = await tools.run_one(ctx, call.name, dict(call.arguments))
        if obs.error is not None or obs.frames is None or obs.window is None:
            return Outcome(reason="tool_error", detail=str(obs.error))
        ws, we = obs.window
        line = result_line(obs, ws, we)
        stored += [
            Message("assistant", turn.render()),
            Message("tool", split_marker(line, VideoPart(job.rel, ws, we, len(obs.frames)))),
        ]
        api += [
            {"role": "assistant", "content": turn.render()},
            observation_message(line, obs.frames),
        ]
        history.append(refl.call)
    return Outcome(reason="max_turns", detail=f"no answer after {s.max_turns} rounds")


def _opening(
    job: RowJob, s: EvaSettings, bank: ExperienceBank
) -> tuple[list[Message], list[ChatMsg]]:
    """The stored row's system and user messages, and the teacher's: its system prompt also shows
    the ``top_k`` banked searches on similar questions."""
    e = job.extra
    system = prompts.system_prompt("eva", (FRAME_SELECT_SPEC,))
    user = prompts.user_prompt(
        e.question,
        e.options,
        duration=job.info.duration,
        nframes=0,
        fps=job.info.fps,
        size=(job.info.width, job.info.height),
    )
    examples = bank.top_k(e.question, s.top_k)
    guide = system + (
        "\n\nSuccessful searches on similar questions:\n\n"
        + "\n\n".join(x.as_example() for x in examples)
        if examples
        else ""
    )
    stored: list[Message] = [Message("system", system), Message("user", user)]
    api: list[ChatMsg] = [{"role": "system", "content": guide}, {"role": "user", "content": user}]
    return stored, api


def _checked_proposal(turn: RepairedTurn, job: RowJob) -> FrameCall | Outcome:
    """The turn's first frame_select as a call, or why the row is dropped (unreadable arguments,
    a window outside the video)."""
    proposal = _proposal(turn.calls[0])
    if proposal is None:
        return Outcome(
            reason="unrepairable", detail=f"frame_select arguments {dict(turn.calls[0].arguments)}"
        )
    why = window_reason(proposal.start, proposal.end, job.info.duration)
    if why is not None:
        return Outcome(reason=why, detail=f"window {proposal.start:g}-{proposal.end:g} s")
    return proposal


def _answered(
    job: RowJob,
    turn: RepairedTurn,
    stored: list[Message],
    history: list[FrameCall],
    plan: str,
    s: EvaSettings,
    bank: ExperienceBank,
) -> Outcome:
    """Validate the final answer, build the row, and bank the trajectory when it is correct."""
    e = job.extra
    verdict = answer_verdict(
        turn.answer, task=e.task, gold=e.answer, options=e.options, keep_incorrect=s.keep_incorrect
    )
    if verdict.reason is not None:
        return Outcome(reason=verdict.reason, detail=f"answer {turn.answer!r}, gold {e.answer!r}")
    answer = canonical_answer(turn.answer or "", e.task, e.options)
    stored = [*stored, Message("assistant", replace(turn, answer=answer).render())]
    row = SFTRow(
        f"{job.row.id}-eva",
        "main",
        "sequential",
        tuple(stored),
        (job.rel,),
        replace(e, source="distill-eva"),
    )
    bad = [v for v in check_row(row) if not (s.keep_incorrect and v.rule == "answer")]
    if bad:
        return Outcome(reason=f"check_{bad[0].rule}", detail=bad[0].detail)
    if verdict.score and verdict.score > 0:
        bank.add(
            Experience(e.question, e.task, plan, tuple(h.arguments() for h in history), answer)
        )
    return Outcome(rows=(row,))


def _proposal(call: CanonicalCall) -> FrameCall | None:
    a = call.arguments
    try:
        return FrameCall(
            float(a["start_time"]),
            float(a["end_time"]),
            int(a.get("nframes", 8)),
            float(a.get("resize", 1.0)),
        )
    except (KeyError, TypeError, ValueError):
        return None


async def _reflect(
    proposal: FrameCall,
    history: list[FrameCall],
    duration: float,
    think: str,
    llm: TeacherClient | None,
    tally: RowCounters,
    max_resize: float,
) -> Reflection:
    refl = reflect(proposal, history, duration=duration, think=think, max_resize=max_resize)
    if llm is None:
        return refl
    facts = {
        "duration": duration,
        "executed": [h.arguments() for h in history],
        "executor_think": think,
        "proposal": refl.call.arguments(),
    }
    reply = await llm.chat([{"role": "user", "content": REFLECTOR_PROMPT + json.dumps(facts)}])
    tally.add(reply)  # a failed or refusing LLM reflector leaves the deterministic correction
    m = _JSON_RE.search(reply.text)
    if not reply.ok or "NO_CHANGE" in reply.text or m is None:
        return refl
    try:
        d = json.loads(m.group())
        corrected = FrameCall(
            float(d["start_time"]),
            float(d["end_time"]),
            int(d["nframes"]),
            float(d.get("resize", refl.call.resize)),
        )
    except (ValueError, KeyError, TypeError):
        return refl
    if (
        window_reason(corrected.start, corrected.end, duration) is not None
        or not 0 < corrected.resize <= 1
    ):
        return refl
    again = reflect(corrected, history, duration=duration, think=think, max_resize=max_resize)
    return Reflection(again.call, (*refl.fired, "llm", *again.fired))
