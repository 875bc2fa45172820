"""`paravt demo --quick` end to end in a subprocess, as a new user would run it: the `paravt repro`
pipeline (micro preset) on three variants, the report and the printed comparison."""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest


@pytest.mark.timeout(600)
def test_quick_demo_runs_every_stage_and_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "paravt.cli", "demo", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=580,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for bar in (
        "Loading weights",
        "Writing model shards",
    ):  # transformers' bars stay out of the demo's output
        assert bar not in proc.stderr and bar not in proc.stdout, bar
    assert (out / "synth" / "manifest.json").is_file()
    assert (out / "prior_strong" / "model" / "config.json").is_file()
    assert not (out / "prior_weak").exists()  # no weak-prior variant in the demo
    for run in ("vanilla_grpo", "paragrpo"):
        log = [
            json.loads(x)
            for x in (out / run / "seed0" / "train_log.jsonl").read_text().splitlines()
        ]
        assert log and log[-1]["step"] == len(log)
        assert {"f_tau", "kappa", "acc", "actor/kl_loss", "actor/loss"} <= set(log[0])
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["variants"]) == ["sft", "vanilla_grpo", "paragrpo"]
    for v in summary["variants"].values():
        assert set(v["eval"]) == {
            "parallel",
            "sequential",
            "none",
        }  # all three are full-grid variants
    html = (out / "report.html").read_text()
    HTMLParser().feed(html)  # parses
    assert html.count("data:image/png;base64,") >= 2
    assert (
        "paravt repro (micro, 1 seed(s)" in proc.stdout and str(out / "report.html") in proc.stdout
    )
    ran = [c for c in summary["claims"] if not c["note"].startswith("not run")]
    assert f"{len(summary['claims']) - len(ran)} claim(s) need variants" in proc.stdout
    # a second run continues: every finished stage is skipped (nothing left to run)
    stages = len(list(out.rglob(".repro-stage-done")))
    before = (out / "paragrpo" / "seed0" / "train_log.jsonl").read_text()
    again = subprocess.run(
        [sys.executable, "-m", "paravt.cli", "demo", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("skipped") == stages
    assert (out / "paragrpo" / "seed0" / "train_log.jsonl").read_text() == before
