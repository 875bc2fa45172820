"""Issue 48 item 7: an offline filter that kept too few prompts (RL then trains on the whole,
unfiltered pool) says so in one stderr line on every `paravt repro` run that trains on that pool,
and the HTML report says it in red above the run's tables and in the filter's table."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from paravt.config import TrainConfig
from paravt.report.page import build_report
from paravt.repro.stages import DONE
from paravt.repro.training import rl_pool

FELL_BACK: dict[str, Any] = {
    "filter": "offline",
    "pool": 3,
    "g": 2,
    "nframes": 64,
    "temperature": 0.7,
    "seed": 0,
    "mean_accuracy": 0.0,
    "fallback": "0 kept < rl.prompts_per_step=1: pool kept",
    "kept": 0,
    "dropped": 3,
    "by_rule": {"all_wrong": 3},
    "rows": [],
}
KEPT = FELL_BACK | {"fallback": None, "kept": 2, "dropped": 1, "mean_accuracy": 0.5}
KEPT |= {"by_rule": {"unanimous": 1}}


def finished_filter(out: Path, report: dict[str, Any]) -> Path:
    d = out / "sft_strong" / "prefilter"
    d.mkdir(parents=True)
    (d / "prefilter.json").write_text(json.dumps(report))
    (d / DONE).write_text("1.0\n")
    return d / "prefilter.json"


def test_a_filter_that_kept_too_few_says_so_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = finished_filter(tmp_path / "a", FELL_BACK)
    caplog.set_level(logging.WARNING)
    pool, report = rl_pool(tmp_path / "a", TrainConfig(), "strong", "init")
    assert pool == path.parent / "rl.parquet" and report == FELL_BACK
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    line = lines[0]
    assert "the offline filter (strong prior) kept 0 of 3 RL prompts" in line
    assert "dropped: all_wrong 3, mean rollout accuracy 0.00" in line
    assert "RL trains on the whole unfiltered pool" in line and str(path) in line
    assert "a larger preset" in line and "--set rl.filter=online" in line  # the fixes

    caplog.clear()
    finished_filter(tmp_path / "b", KEPT)
    rl_pool(tmp_path / "b", TrainConfig(), "strong", "init")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_the_report_says_it_above_the_run_and_in_the_filters_table(tmp_path: Path) -> None:
    runs = {}
    for name, report in (("fell_back", FELL_BACK), ("kept", KEPT)):
        root = tmp_path / name
        root.mkdir()
        summary = {"variants": {}, "claims": [], "selection": {"strong": {"prefilter": report}}}
        (root / "summary.json").write_text(json.dumps(summary))
        seed = root / "vanilla_grpo" / "seed0"  # a report needs a run's files beside the summary
        seed.mkdir(parents=True)
        (seed / "train_log.jsonl").write_text('{"step": 1, "f_tau": 0.5, "kappa": 1.0}\n')
        runs[name] = build_report([root], tmp_path / f"{name}.html").read_text(encoding="utf-8")
    page = runs["fell_back"]
    note = "the offline filter (strong prior) kept 0 of 3 RL prompts (dropped: all_wrong 3"
    assert page.count(note) == 1 and '<p class="note bad">the offline filter' in page
    assert page.index(note) < page.index("Training dynamics")  # above the run's tables
    table = page.split('<table class="prefilter">')[1].split("</table>")[0]
    assert '<td class="l">strong</td><td class="">3</td><td class="">0</td>' in table
    assert "all_wrong 3" in table and "the whole pool (too few kept)" in table

    kept = runs["kept"]
    assert "the offline filter (strong prior)" not in kept
    table = kept.split('<table class="prefilter">')[1].split("</table>")[0]
    assert '<td class="">2</td>' in table and "unanimous 1" in table
    assert "the kept prompts" in table and "0.500" in table
