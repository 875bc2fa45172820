"""The base's learning curve (issue 47, M1): which checkpoints are probed, and the table's rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from paravt.repro.base_curve import checkpoint_models, curve_rows
from paravt.repro.table import curve_table


def _model(d: Path) -> None:
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")


def _train(tmp_path: Path, steps: list[int]) -> Path:
    train = tmp_path / "train"
    for s in steps:
        _model(train / "checkpoints" / f"step_{s:06d}" / "model")
    (train / "checkpoints" / "step_000050").mkdir(parents=True)  # a step cut before its model
    _model(train / "model")  # the final model: the run's own probes hold its point
    return train


def test_the_multiples_of_every_before_the_final_step(tmp_path: Path) -> None:
    train = _train(tmp_path, [100, 200, 300, 400])
    got = checkpoint_models(train, 200, final_step=450)
    assert [(s, p.relative_to(train).as_posix()) for s, p in got] == [
        (200, "checkpoints/step_000200/model"),
        (400, "checkpoints/step_000400/model"),
    ]
    assert [s for s, _ in checkpoint_models(train, 100, final_step=450)] == [100, 200, 300, 400]


def test_the_final_steps_checkpoint_is_left_to_the_runs_probe(tmp_path: Path) -> None:
    train = _train(tmp_path, [100, 200])
    assert [s for s, _ in checkpoint_models(train, 100, final_step=200)] == [100]
    assert checkpoint_models(train, 100, final_step=100) == []


def test_every_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--base-curve"):
        checkpoint_models(tmp_path, 0, final_step=100)


def test_rows_carry_each_checks_headline_and_the_table_marks_what_fails() -> None:
    points = [
        {
            "step": 400,
            "checks": {
                "base_clip_recall": {"value": {"rate": 0.91, "hits": 1, "of": 1}, "holds": True},
                "base_overview_open_at_64": {
                    "value": {"acc": {"rate": 0.225}, "at_4": {"rate": 0.1}},
                    "holds": False,
                },
                "base_tool_forms": {
                    "value": {"tool_call_closed": 0.8125, "tool_code": 0.27},
                    "holds": True,
                },
                "base_think_overrun": {"value": 0.0, "holds": False},
            },
        }
    ]
    (row,) = curve_rows(points)
    assert row == {
        "step": 400,
        "base_clip_recall": (0.91, True),
        "base_overview_open_at_64": (0.225, False),
        "base_tool_forms": ("0.81 / 0.27", True),
        "base_think_overrun": (0.0, False),
    }
    console = Console(width=200, record=True)
    console.print(curve_table([row], "curve"))
    text = console.export_text()
    assert "0.91" in text and "0.23 ✗" in text and "0.81 / 0.27" in text and "0.00 ✗" in text
    assert "clip_recall" in text and "base_clip_recall" not in text
