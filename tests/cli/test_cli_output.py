"""Output conventions (paravt/cli/output.py): errors on stderr, one line each, exit non-zero,
stdout empty so that --json output stays parseable; no traceback."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from paravt.video import write_video

CLI = [sys.executable, "-c", "from paravt.cli import app; app()"]


@pytest.mark.parametrize(
    "argv",
    [
        ["video", "probe", "{missing}", "--json"],
        ["video", "frames", "{missing}", "--start", "0", "--end", "1", "--out", "{tmp}/o"],
        ["score", "--in", "{missing}"],
        ["config", "check", "{missing}"],
        ["report", "{missing}"],
    ],
)
def test_errors_go_to_stderr_unwrapped_with_a_nonzero_exit(tmp_path: Path, argv: list[str]) -> None:
    missing = tmp_path / ("a-rather-long-directory-name-" * 3) / "no-such-file-with-a-long-name.mp4"
    args = [a.format(missing=missing, tmp=tmp_path) for a in argv]
    proc = subprocess.run([*CLI, *args], capture_output=True, text=True)
    assert proc.returncode != 0 and proc.stdout == ""
    assert "Traceback" not in proc.stderr
    line = next(ln for ln in proc.stderr.splitlines() if "no-such-file" in ln)
    assert str(missing) in line  # the whole path on one line: never hard-wrapped in a pipe


def test_json_output_is_only_json(tmp_path: Path) -> None:
    video = write_video(tmp_path / "v.mp4", np.zeros((8, 32, 32, 3), np.uint8), 4)
    proc = subprocess.run(
        [*CLI, "video", "probe", str(video), "--json"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["duration"] == pytest.approx(2.0)
