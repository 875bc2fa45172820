"""Deliverable 7's checks on hand-built eval rows: each can hold and each can fail (the sub-agent
recall check is issue 31's, on the cold start: tests/repro/test_cold_start_task_checks.py)."""

from __future__ import annotations

from typing import Any

import pytest

from paravt.repro.task_check import chance_score, check_task

NEEDLE = {
    "4": {"tool_necessary_share": 0.8},
    "64": {"tool_necessary_share": 0.0},
    "16": {"tool_necessary_share": 0.3},
}


def _rows(mode: str, n: int, scores: list[float]) -> list[dict[str, Any]]:
    return [
        {"id": f"q{i}", "mode": mode, "nframes": n, "score": s, "seed": 0}
        for i, s in enumerate(scores)
    ]


def test_a_task_where_the_method_can_show() -> None:
    rows = (
        _rows("parallel", 64, [1, 0, 1, 1, 0, 1] * 5)
        + _rows("none", 64, [1, 1, 0, 1, 0, 1] * 5)
        + _rows("none", 4, [0, 0, 0, 0, 0, 1] * 5)
    )
    out = check_task(NEEDLE, chance=0.25, eval_rows={"sft": rows})
    assert out["reference"] == "sft"
    assert out["overview_shows_needle"]["value"] == {"4": 0.2, "16": 0.7, "64": 1.0}
    assert list(out["overview_shows_needle"]["value"]) == ["4", "16", "64"]  # by n, not by string
    assert all(
        out[k]["holds"]
        for k in (
            "overview_shows_needle",
            "direct_matches_tools_at_64",
            "direct_near_chance_at_4",
            "direct_above_chance_at_64",
        )
    )


def test_a_task_where_it_cannot() -> None:
    rows = (
        _rows("parallel", 64, [1] * 30)
        + _rows("none", 64, [0] * 30)  # tools needed even at 64
        + _rows("none", 4, [1] * 30)
    )  # direct answering far above chance at 4
    needle = {"4": {"tool_necessary_share": 0.1}, "64": {"tool_necessary_share": 0.2}}
    out = check_task(needle, chance=0.25, eval_rows={"paragrpo": rows, "sft": []})
    assert out["reference"] == "paragrpo"
    assert not any(
        out[k]["holds"]
        for k in (
            "overview_shows_needle",
            "direct_matches_tools_at_64",
            "direct_near_chance_at_4",
            "direct_above_chance_at_64",
        )
    )
    assert out["direct_matches_tools_at_64"]["value"]["parallel_minus_none"][
        "mean"
    ] == pytest.approx(1.0)


def test_a_model_that_cannot_answer_passes_the_chance_checks_but_not_the_n64_one() -> None:
    rows = (
        _rows("parallel", 64, [0] * 30) + _rows("none", 64, [0] * 30) + _rows("none", 4, [0] * 30)
    )
    out = check_task(NEEDLE, 0.25, {"sft": rows})
    assert out["direct_matches_tools_at_64"]["holds"] and out["direct_near_chance_at_4"]["holds"]
    assert not out["direct_above_chance_at_64"]["holds"]


def test_without_a_direct_answering_eval_only_the_task_property_is_reported() -> None:
    out = check_task(NEEDLE, chance=0.1, eval_rows={"paragrpo": _rows("parallel", 4, [1, 0])})
    assert out["reference"] is None and set(out) == {"overview_shows_needle", "reference"}


def test_chance_is_one_over_the_options_for_mcq_and_zero_otherwise() -> None:
    assert chance_score([("A", "B", "C", "D"), None, ("A", "B")]) == pytest.approx(
        (0.25 + 0 + 0.5) / 3
    )
    assert chance_score([]) == 0.0
