"""benchmarks/gpu_checks.sh on a machine without a GPU: the CPU column of the device table is
measured and written into the doc between its markers (replacing the table of an earlier run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


@pytest.mark.slow  # one synth video, the tiny s model, a few passes: ~50 s of CPU
def test_gpu_checks_cpu_path_measures_and_writes_the_table(tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    old = "<!-- device-table:begin -->\n| an old table |\n<!-- device-table:end -->"
    doc.write_text(f"# Where the time goes\n\nearlier text\n\n{old}\n\nlater text\n")
    env = os.environ | {
        "OUT": str(tmp_path / "gpu"),
        "DOC": str(doc),
        "BATCH": "2",
        "REPEATS": "1",
        "VIDEOS": "1",
        "PYTHON": sys.executable,
        "CUDA_VISIBLE_DEVICES": "",  # the CPU path, whatever this machine has
        "WHEELS": str(tmp_path / "no-wheels"),
    }
    run = subprocess.run(
        ["bash", "benchmarks/gpu_checks.sh"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    res = json.loads((tmp_path / "gpu" / "cpu.json").read_text())
    assert res["device"] == "cpu" and res["batch"] == 2
    assert 0 < res["sft_s_per_row"] < 60 and 0 < res["update_s_per_row"] < 60
    assert res["syncs"]["per_decode_step"] >= 1  # transformers' stop check reads the device
    assert 1 < res["rows_per_forward"] <= 2  # two rows, the second joining while one decodes
    text = doc.read_text()
    assert text.startswith("# Where the time goes\n\nearlier text\n")
    assert text.endswith("\n\nlater text\n") and "an old table" not in text  # replaced in place
    assert text.count("<!-- device-table:begin -->") == 1
    table = text.split("<!-- device-table:begin -->")[1].split("<!-- device-table:end -->")[0]
    assert "| cpu (" in table and f"{res['sft_s_per_row']:.4f}" in table
    assert "no CUDA device" in run.stdout
