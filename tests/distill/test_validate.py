"""Validation of distilled traces: one test per reject reason, and what passes."""

from __future__ import annotations

import pytest

from paravt.distill.validate import answer_verdict, canonical_answer, validate_trace

OPTS = ("A. green cross", "B. red square", "C. orange circle", "D. magenta square")


@pytest.mark.parametrize(
    ("windows", "answer", "task", "gold", "reason"),
    [
        ([(30.0, 10.0)], "D", "mcq", "D", "start_ge_end"),
        ([(20.0, 20.0)], "D", "mcq", "D", "start_ge_end"),
        ([(100.0, 140.0)], "D", "mcq", "D", "window_outside"),  # ends 20 s past a 120 s video
        ([(-5.0, 10.0)], "D", "mcq", "D", "window_outside"),
        ([(0.0, 20.0)], "   ", "mcq", "D", "empty_answer"),
        ([(0.0, 20.0)], None, "oe", "red", "empty_answer"),
        ([(0.0, 20.0)], "B", "mcq", "D", "incorrect"),
        ([], "[0, 3]", "tvg", "[50, 55]", "incorrect"),  # IoU 0
        ([], "a blue circle", "oe", "magenta square", "incorrect"),  # token F1 0
    ],
)
def test_each_reject_reason(
    windows: list, answer: str | None, task: str, gold: str, reason: str
) -> None:
    v = validate_trace(
        windows,
        answer,
        duration=120.0,
        task=task,
        gold=gold,
        options=OPTS if task == "mcq" else None,
    )
    assert v.reason == reason


def test_partial_credit_and_rounding_slack_pass() -> None:
    v = validate_trace([(0.0, 120.4)], "[50, 60]", duration=120.0, task="tvg", gold="[50, 55]")
    assert v.reason is None and v.score == pytest.approx(0.5)
    assert (
        validate_trace(
            [], "a magenta thing", duration=60.0, task="oe", gold="magenta square"
        ).reason
        is None
    )


def test_keep_incorrect_keeps_a_wrong_answer_but_not_an_empty_one() -> None:
    assert (
        answer_verdict("B", task="mcq", gold="D", options=OPTS, keep_incorrect=True).reason is None
    )
    assert (
        answer_verdict("", task="mcq", gold="D", options=OPTS, keep_incorrect=True).reason
        == "empty_answer"
    )


def test_mcq_answers_are_written_as_the_letter() -> None:
    assert canonical_answer("D. magenta square", "mcq", OPTS) == "D"
    assert canonical_answer("The answer is (B)", "mcq", OPTS) == "B"
    assert canonical_answer(" [50, 55] ", "tvg", None) == "[50, 55]"
