"""Issue 39's stage checks on hand-made probe metrics: each holds and fails where it should."""

from __future__ import annotations

import pytest

from paravt.repro.base_probe import habit_checks
from paravt.repro.task_check import cold_start_checks, weak_prior_checks

STRONG = {"closed/think": 0.8, "closed/tool_call": 0.5, "tool_code_rate": 0.2, "kappa_written": 2}


def test_strong_base_needs_both_tool_forms_and_a_think_tail() -> None:
    ok = habit_checks(STRONG, strong=True)
    assert ok["base_tool_forms"]["holds"] and ok["base_think_overrun"]["holds"]
    assert ok["base_think_overrun"]["value"] == pytest.approx(0.2)
    no_code = habit_checks({**STRONG, "tool_code_rate": 0.0}, strong=True)
    assert not no_code["base_tool_forms"]["holds"]  # only the native form: not both
    no_json = habit_checks({**STRONG, "closed/tool_call": 0.0}, strong=True)
    assert not no_json["base_tool_forms"]["holds"]
    always_closed = habit_checks({**STRONG, "closed/think": 1.0}, strong=True)
    never_closed = habit_checks({**STRONG, "closed/think": 0.3}, strong=True)
    assert not always_closed["base_think_overrun"]["holds"]  # no tail at all
    assert not never_closed["base_think_overrun"]["holds"]  # 70 % run on: no format to start from
    assert not habit_checks(None, strong=True)["base_tool_forms"]["holds"]  # nothing measured


def test_weak_base_has_no_tool_form() -> None:
    clean = {"closed/think": 1.0, "closed/tool_call": 0.0, "tool_code_rate": 0.0}
    assert habit_checks(clean, strong=False)["weak_base_no_tool_form"]["holds"]
    leaky = {**clean, "tool_code_rate": 0.04}
    assert not habit_checks(leaky, strong=False)["weak_base_no_tool_form"]["holds"]


@pytest.mark.parametrize(
    ("rate", "holds"), [(0.0, False), (0.01, True), (0.05, True), (0.2, False)]
)
def test_cold_start_tool_code_in_the_band(rate: float, holds: bool) -> None:
    m = {
        "closed/think": 0.5,
        "closed/tool_call": 0.45,
        "closed/answer": 0.3,
        "tool_code_rate": rate,
    }
    checks = cold_start_checks(m)
    assert checks["cold_start_tool_code"]["holds"] is holds
    assert checks["cold_start_closure"]["holds"]  # 50 / 45 / 30 are within 15 points of Table 5


def test_weak_prior_keeps_format_against_the_strong() -> None:
    strong = {"f_tau": 0.5, "kappa": 2.4}
    kept = weak_prior_checks({"f_tau": 0.45, "kappa": 0.0}, strong)["weak_prior_format"]
    assert kept["holds"] and kept["value"]["weak_kappa"] == 0.0
    lost = weak_prior_checks({"f_tau": 0.3, "kappa": 0.0}, strong)["weak_prior_format"]
    assert not lost["holds"]
    assert not weak_prior_checks({}, strong)["weak_prior_format"]["holds"]
