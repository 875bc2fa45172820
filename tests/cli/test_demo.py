"""`paravt demo --quick` end to end in a subprocess, as a new user would run it."""

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
    proc = subprocess.run([sys.executable, "-m", "paravt.cli", "demo", "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=580)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # every stage left its artefacts
    assert (out / "synth" / "manifest.json").is_file()
    for run in ("sft", "paragrpo", "vanilla_grpo"):
        log = [json.loads(x) for x in (out / run / "train_log.jsonl").read_text().splitlines()]
        assert log and log[-1]["step"] == len(log)
        assert (out / run / "model" / "config.json").is_file()
    rl_log = json.loads((out / "paragrpo" / "train_log.jsonl").read_text().splitlines()[0])
    assert {"f_tau", "kappa", "acc", "kl", "loss", "time/rollout"} <= set(rl_log)
    for name in ("base", "sft", "paragrpo", "vanilla_grpo"):
        rows = [json.loads(x) for x in (out / f"eval_{name}" / "results.jsonl").read_text().splitlines()]
        assert {r["mode"] for r in rows} == {"parallel", "sequential", "none"}
        metrics = json.loads((out / f"eval_{name}" / "metrics.json").read_text())
        assert set(metrics["by_mode"]) == {"parallel", "sequential", "none"}
    html = (out / "report.html").read_text()
    HTMLParser().feed(html)  # parses
    assert html.count("data:image/png;base64,") >= 2
    assert "held-out ParaVT-Synth questions" in proc.stdout and str(out / "report.html") in proc.stdout
    # a second run continues: every finished stage is skipped, evals resume (nothing left to run)
    before = (out / "paragrpo" / "train_log.jsonl").read_text()
    again = subprocess.run([sys.executable, "-m", "paravt.cli", "demo", "--quick", "--out", str(out)],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("skipped") == 5
    assert (out / "paragrpo" / "train_log.jsonl").read_text() == before
