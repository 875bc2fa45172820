"""Stage checks over base seeds (issue 47, M1/M2): a check holds only when it holds on every base;
`paravt repro --base-seeds N --checks-only` runs one cold start per base seed and no RL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from paravt.cli import app
from paravt.repro.base_seeds import checks_over_seeds


def _summary(kappa: float, holds: bool, sign_gap: float | None) -> dict[str, Any]:
    t: dict[str, Any] = {
        "cold_start_kappa": {"value": kappa, "want": "in [1.5, 3.5]", "holds": holds},
        "reference": "sft",  # not a check: no "holds"
    }
    adv = (
        None if sign_gap is None else {"mean": sign_gap, "lo": sign_gap - 0.1, "hi": sign_gap + 0.1}
    )
    return {
        "task_check": t,
        "reward_by_path": {"vanilla_grpo": {"64": {"attempt_minus_skip": {"advantage": adv}}}},
    }


def test_a_check_holds_only_when_it_holds_on_every_base_seed() -> None:
    c = checks_over_seeds({0: _summary(2.1, True, 0.5), 1: _summary(0.7, False, -0.02)})
    k = c["checks"]["cold_start_kappa"]
    assert k["values"] == [2.1, 0.7] and k["holds"] == [True, False]
    assert k["holds_on_all"] is False and c["held_on_all"] == []
    assert "reference" not in c["checks"]
    assert c["reward_by_path_sign"] == {
        "0": {"vanilla_grpo": {"64": 1}},
        "1": {"vanilla_grpo": {"64": 0}},
    }
    both = checks_over_seeds({0: _summary(2.1, True, None), 1: _summary(3.0, True, None)})
    assert both["held_on_all"] == ["cold_start_kappa"]
    assert both["reward_by_path_sign"]["0"]["vanilla_grpo"]["64"] is None


def test_a_check_missing_on_one_seed_does_not_hold() -> None:
    c = checks_over_seeds({0: _summary(2.1, True, 0.5), 1: {"task_check": {}}})
    assert c["checks"]["cold_start_kappa"]["holds"] == [True, False]
    assert c["checks"]["cold_start_kappa"]["holds_on_all"] is False


def test_checks_only_over_two_base_seeds_builds_two_bases_and_no_rl(tmp_path: Path) -> None:
    out = tmp_path / "checks"
    res = CliRunner().invoke(
        app,
        ["repro", "--preset", "micro", "--base-seeds", "2", "--checks-only", "--eval-limit", "1"]
        + ["--base-curve", "1", "--set", "prior.save_every=1", "--out", str(out)],
    )
    assert res.exit_code == 0, res.output
    checks = json.loads((out / "checks.json").read_text())
    assert checks["seeds"] == [0, 1]
    for s in (0, 1):
        summary = json.loads((out / f"base_seed{s}" / "summary.json").read_text())
        assert set(summary["variants"]) == {"sft"}  # no RL variant ran
        for name, c in checks["checks"].items():
            assert c["holds"][s] == summary["task_check"][name]["holds"]
    bases = sorted(p.name for p in (out / "bases").glob("strong-*"))
    assert len(bases) == 2  # one base per seed, each under its own key
    assert "cold_start_kappa" in checks["checks"] and "stage checks over 2 base seed" in res.output
    # --base-curve 1: each base's step-1 checkpoint probed, then its final model (step 2) read
    for s in (0, 1):
        run = out / f"base_seed{s}"
        curve = json.loads((run / "prior_strong" / "curve.json").read_text())
        assert [pt["step"] for pt in curve] == [1, 2]
        probe = json.loads((run / "prior_strong" / "base.json").read_text())["probe"]
        final = curve[-1]["checks"]["base_clip_recall"]["value"]
        assert final == probe["clip_recall"]  # the final point is the base the run used
        overrun = curve[-1]["checks"]["base_think_overrun"]["value"]
        assert overrun == round(1.0 - probe["habit"]["closed/think"], 4)  # and its habit probe
        assert set(curve[0]["checks"]) >= {"base_clip_recall", "base_think_overrun"}
    assert "learning curve" in res.output


def test_checks_only_refuses_an_rl_variant(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app,
        [
            "repro",
            "--preset",
            "micro",
            "--checks-only",
            "--variants",
            "vanilla_grpo",
            "--out",
            str(tmp_path),
        ],
    )
    assert res.exit_code != 0 and "--checks-only" in (res.output + str(res.exception))
