"""Validation of a distilled trace (ParaVT §B cleanup + rejection sampling).

Reject reasons (``REASONS``), first failing one wins:
- ``start_ge_end``: a call's window has start ≥ end (as the teacher wrote it);
- ``window_outside``: a call's window reaches outside ``[0, duration]`` by more than
  ``tol_s`` (0.5 s: rounding of the teacher's times). Such calls are not clamped: a teacher that
  aims outside the video has misread it, and its trace would teach that;
- ``empty_answer``: the final answer is empty;
- ``incorrect``: the answer scores 0 against the row's gold (`paravt.rewards.accuracy`: letter
  match for MCQ, IoU for grounding, token F1 for open-ended); skipped with ``keep_incorrect``.

`canonical_answer` writes an MCQ answer as its option letter (the system prompt asks for "only
the option letter"; `paravt data check` compares the final answer with the gold verbatim).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from paravt.rewards.accuracy import accuracy, mcq_letter

REASONS: tuple[str, ...] = ("start_ge_end", "window_outside", "empty_answer", "incorrect")
WINDOW_TOL_S = 0.5


@dataclass(frozen=True)
class Verdict:
    reason: str | None  # None = accepted
    score: float | None = None  # accuracy against the gold (None when not scored)


def window_reason(
    start: float, end: float, duration: float, tol_s: float = WINDOW_TOL_S
) -> str | None:
    if start >= end:
        return "start_ge_end"
    if start < -tol_s or end > duration + tol_s:
        return "window_outside"
    return None


def canonical_answer(answer: str, task: str, options: Sequence[str] | None) -> str:
    answer = answer.strip()
    if task == "mcq":
        letter = mcq_letter(answer, options)
        if letter is not None:
            return letter
    return answer


def answer_verdict(
    answer: str | None,
    *,
    task: str,
    gold: str,
    options: Sequence[str] | None,
    keep_incorrect: bool = False,
) -> Verdict:
    if answer is None or not answer.strip():
        return Verdict("empty_answer")
    score = accuracy(task, answer, gold, options)
    if score <= 0 and not keep_incorrect:
        return Verdict("incorrect", score)
    return Verdict(None, score)


def validate_trace(
    windows: Sequence[tuple[float, float]],
    answer: str | None,
    *,
    duration: float,
    task: str,
    gold: str,
    options: Sequence[str] | None = None,
    keep_incorrect: bool = False,
) -> Verdict:
    """The whole rule list over a finished trace (the pipelines apply the window rule per call as
    the teacher makes it, to stop early, and the answer rule at the end)."""
    for s, e in windows:
        why = window_reason(s, e, duration)
        if why is not None:
            return Verdict(why)
    return answer_verdict(
        answer, task=task, gold=gold, options=options, keep_incorrect=keep_incorrect
    )
