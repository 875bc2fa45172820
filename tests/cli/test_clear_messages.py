"""Issue 41 item 7: the unclear messages of the issue made clear (the path, what was kept, the
fix), and no temp or lock file left behind on a failure path. Through the real app
(``paravt.cli.app``) where a command is involved; the fault is injected where it happens."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import paravt.jsonl
from paravt import runlock
from paravt.cli import app
from paravt.errors import DiskError
from paravt.jsonl import write_atomic

sys.path.insert(0, str(Path(__file__).parents[1] / "eval"))
import fakeruns  # noqa: E402


def _one_line(res: object) -> str:
    stderr = res.stderr  # type: ignore[attr-defined]
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and "Traceback" not in stderr, stderr  # type: ignore[attr-defined]
    return lines[0]


def test_a_full_disk_at_the_lock_names_the_path_and_leaves_no_lock_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: ENOSPC at eval start named no path and left a 0-byte ``OUT/.paravt.lock.<token>``."""

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    out = tmp_path / "ev"
    monkeypatch.setattr(runlock.os, "fsync", full)
    with pytest.raises(DiskError) as err, runlock.hold(out, "paravt eval"):
        pass
    text = str(err.value)
    assert f"cannot write the lock of the output directory {out / '.paravt.lock'}" in text
    assert "No space left on device" in text and "no lock was taken" in text
    assert sorted(os.listdir(out)) == []  # neither the lock nor its private temp file
    monkeypatch.undo()
    with runlock.hold(out, "paravt eval"):  # the next run takes the lock as usual
        assert (out / ".paravt.lock").exists()
    assert sorted(os.listdir(out)) == []


def test_report_onto_an_existing_directory_is_one_line_and_leaves_no_temp_file(
    tmp_path: Path,
) -> None:
    """Before: `report RUN -o EXISTING_DIR` left a 348 KB ``EXISTING_DIR.tmp``."""
    demo = fakeruns.write_demo(tmp_path / "demo", with_video=False, n=3)
    target = tmp_path / "existing"
    target.mkdir()
    res = CliRunner().invoke(app, ["report", str(demo / "sft"), "-o", str(target)])
    line = _one_line(res)
    assert (
        f"{target}: it is a directory; pass a file path" in line and "nothing was written" in line
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo", "existing"]


def test_an_interrupted_atomic_write_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "metrics.json"
    target.write_text("{}\n")

    def interrupted(src: object, dst: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(paravt.jsonl.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, '{"n": 1}\n', "the eval metrics")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]
    assert target.read_text() == "{}\n"  # the previous file, unchanged


@pytest.mark.parametrize("command", ["serve-tools", "serve-model"])
@pytest.mark.parametrize("host", ["127.0.0.1 ", " 127.0.0.1", "127.0.0.1\t", ""])
def test_a_host_with_blanks_is_refused_before_binding(command: str, host: str) -> None:
    """Before: ``--host '127.0.0.1 '`` passed the loopback test, then failed inside uvicorn."""
    args = [command, "--host", host, "--port", "9"]
    if command == "serve-model":
        args += ["--model", "m"]
    line = _one_line(CliRunner().invoke(app, args))
    assert f"--host {host!r}: a host has no spaces or blanks" in line


@pytest.mark.parametrize(
    "knob", ["rl.steps=100000000000000000000", "rl.steps=1.0e+15", "sft.max_steps=20000000"]
)
def test_a_step_count_past_any_run_is_refused_by_name(tmp_path: Path, knob: str) -> None:
    """Before: ``rl.steps`` took any integer (1e20 included) and ran "forever"."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"data: {tmp_path / 'none.parquet'}\nout_dir: {tmp_path / 'run'}\n")
    kind = knob.split(".")[0]
    line = _one_line(CliRunner().invoke(app, ["train", kind, "--config", str(cfg), "--set", knob]))
    assert knob.split("=")[0] in line and "less than or equal to 10000000" in line
