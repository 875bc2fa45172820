"""`paravt data …` end to end: `check` in a subprocess (the console entry point and its exit
codes), the other commands in-process through typer's runner (imports cost ~2 s per process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from data_traces import DURATION, answer, head, parallel
from typer.testing import CliRunner

from paravt.cli.data import app
from paravt.data.schema import read_rows, write_rows
from paravt.video.writer import Encoding, write_video


def _run(*args: str) -> subprocess.CompletedProcess:
    code = "from paravt.cli import app; app()"
    return subprocess.run(
        [sys.executable, "-c", code, "data", *args], capture_output=True, text=True, timeout=120
    )


def test_check_exits_1_on_a_bad_file_and_0_on_synth(tmp_path: Path, synth_dir: Path) -> None:
    bad = write_rows(tmp_path / "bad.parquet", [parallel([*head(), answer(ans="A")])])
    # its video is probed, and spans the row's whole-video part (the screening checks windows)
    frames = [np.full((32, 32, 3), 40, np.uint8)] * (int(DURATION) + 1)
    write_video(tmp_path / "v.mp4", frames, 1, encoding=Encoding(gop=300))
    res = _run("check", str(bad), "--json")
    assert res.returncode == 1, res.stderr
    out = json.loads(res.stdout)
    assert out["failed_rows"] == 1 and out["by_rule"] == {"answer": 1}
    ok = _invoke("check", str(synth_dir / "sft.parquet"))
    assert ok.returncode == 0, ok.stdout + ok.stderr


def _invoke(*args: str) -> subprocess.CompletedProcess:
    res = CliRunner().invoke(app, list(args))
    return subprocess.CompletedProcess(args, res.exit_code, res.stdout, "")


def test_synth_convert_and_prefilter_commands_write_their_files(tmp_path: Path) -> None:
    res = _invoke(
        "synth",
        "--out",
        str(tmp_path / "s"),
        "--videos",
        "3",
        "--rl-videos",
        "3",
        "--tool-share",
        "0.5",
        "--eval-videos",
        "1",
        "--json",
    )
    assert res.returncode == 0, res.stderr
    manifest = json.loads(res.stdout)
    assert manifest["counts"]["rl"] == 9 and manifest["counts"]["eval"] == 3
    assert manifest["params"]["rl_videos"] == 3 and manifest["params"]["tool_share"] == 0.5
    conv = _invoke(
        "convert",
        "--in",
        str(tmp_path / "s" / "sft.parquet"),
        "--out",
        str(tmp_path / "c.parquet"),
        "--json",
    )
    assert conv.returncode == 0, conv.stderr
    stats = json.loads(conv.stdout)
    assert stats["rows"] == len(read_rows(tmp_path / "c.parquet"))
    pf = _invoke(
        "prefilter",
        "--in",
        str(tmp_path / "s" / "rl.parquet"),
        "--out",
        str(tmp_path / "p.parquet"),
    )
    assert pf.returncode == 0, pf.stderr
    assert len(read_rows(tmp_path / "p.parquet")) == 9  # synth answers are short: nothing dropped
    assert json.loads((tmp_path / "p.prefilter.json").read_text())["dropped"] == 0
