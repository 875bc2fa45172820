"""Issue 34 item 5: a full disk (ENOSPC) or a refused write (EACCES, EROFS) while writing a
checkpoint, the results or the report is ONE line on stderr naming the path and what was kept,
exit 2, no traceback (before: a full disk while saving a checkpoint was an "internal error"
traceback, exit 1). The writes are made to fail by monkeypatching the one function that performs
them, and the commands run through the real app (``paravt.cli.app``, its root error handler)."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from typer.testing import CliRunner

import paravt.jsonl
import paravt.rl.checkpoint
from paravt.cli import app
from paravt.data.synth.build import build
from paravt.errors import DiskError, disk_cause
from paravt.rl.checkpoint import resume_point

ERRNOS = {
    errno.ENOSPC: "No space left on device",
    errno.EACCES: "Permission denied",
    errno.EROFS: "Read-only file system",
}


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = Path(tmp_path_factory.mktemp("synth"))
    build(out, videos=2, eval_videos=0, seed=0, workers=1)
    return out


def _config(tmp_path: Path, synth: Path, model: str) -> Path:
    cfg = tmp_path / "sft.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "out_dir": str(tmp_path / "run"),
                "data": str(synth / "sft.parquet"),
                "model": {"path": model},
                "video": {
                    "overview_nframes": 4,
                    "overview_max_pixels": 4096,
                    "crop_max_pixels": 4096,
                    "crop_max_frames": 4,
                },
                "sft": {
                    "batch_size": 2,
                    "warmup_steps": 0,
                    "save_every": 1,
                    "max_steps": 3,
                    "lr": 1e-3,
                },
            }
        )
    )
    return cfg


def _fail_on_call(n: int, code: int, real: Callable[..., Any]) -> Callable[..., Any]:
    """``real``, except that its ``n``-th call raises OSError(``code``) (no path: as a write
    does)."""
    calls = {"n": 0}

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == n:
            raise OSError(code, ERRNOS[code])
        return real(*args, **kwargs)

    return wrapped


def _one_line(res: Any) -> str:
    assert res.exit_code == 2, (res.exit_code, res.stderr)
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr
    progress = ("sft ", "Loading weights", "Writing model shards")  # bars of rich and transformers
    lines = [ln for ln in res.stderr.splitlines() if ln.strip() and not ln.startswith(progress)]
    assert len(lines) == 1, res.stderr
    return lines[0]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("code", list(ERRNOS))
def test_a_failed_checkpoint_write_is_one_line_naming_it_and_the_checkpoint_kept(
    code: int, tmp_path: Path, synth: Path, tiny_qwen3_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second checkpoint's trainer.pt fails: step_000002.tmp is removed, step_000001 is kept
    and is what --resume uses."""
    monkeypatch.setattr(paravt.rl.checkpoint.torch, "save", _fail_on_call(2, code, torch.save))
    res = CliRunner().invoke(
        app, ["train", "sft", "--config", str(_config(tmp_path, synth, tiny_qwen3_dir))]
    )
    line = _one_line(res)
    ckpts = tmp_path / "run" / "checkpoints"
    assert f"cannot write checkpoint {ckpts / 'step_000002'}: {ERRNOS[code]}" in line
    assert f"--resume continues from {ckpts / 'step_000001'}" in line
    assert sorted(p.name for p in ckpts.iterdir()) == ["step_000001"]  # the partial .tmp is gone
    assert resume_point(ckpts).checkpoint == ckpts / "step_000001"
    assert not (tmp_path / "run" / "model").exists()


@pytest.mark.timeout(300)
def test_a_failed_write_of_the_final_model_keeps_the_last_checkpoint_and_no_partial_model(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = paravt.rl.checkpoint.save_final_model

    def full(path: Path, **kw: Any) -> None:
        def failing(d: Path) -> None:
            raise OSError(errno.ENOSPC, ERRNOS[errno.ENOSPC])

        real(path, **{**kw, "write_config": failing})

    monkeypatch.setattr("paravt.rl.loop.save_final_model", full)
    res = CliRunner().invoke(
        app, ["train", "sft", "--config", str(_config(tmp_path, synth, tiny_qwen3_dir))]
    )
    line = _one_line(res)
    run = tmp_path / "run"
    assert f"cannot write the final model {run / 'model'}: No space left on device" in line
    assert f"--resume continues from {run / 'checkpoints' / 'step_000002'}" in line
    assert not (run / "model").exists() and not (run / "model.tmp").exists()


@pytest.mark.timeout(300)
def test_a_failed_results_row_and_a_failed_report_are_one_line_each(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step log (an append, like eval's results.jsonl) and the report (an atomic replace, like
    metrics.json and summary.json): the rows before and the previous report are kept."""
    cfg = _config(tmp_path, synth, tiny_qwen3_dir)
    monkeypatch.setattr(
        paravt.jsonl, "_append", _fail_on_call(2, errno.ENOSPC, paravt.jsonl._append)
    )
    line = _one_line(CliRunner().invoke(app, ["train", "sft", "--config", str(cfg)]))
    log = tmp_path / "run" / "train_log.jsonl"
    assert (
        f"cannot write rows to {log}: No space left on device; kept: the rows train_log.jsonl held"
        in line
    )
    assert len(log.read_text().splitlines()) == 1  # the first step's row

    report = tmp_path / "report.html"
    report.write_text("previous report")
    monkeypatch.setattr(
        paravt.jsonl, "_write_synced", _fail_on_call(1, errno.EROFS, paravt.jsonl._write_synced)
    )
    line = _one_line(
        CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--out", str(report)])
    )
    assert (
        f"cannot write the report {report}: Read-only file system; kept: the previous "
        "report.html, unchanged" in line
    )
    assert report.read_text() == "previous report" and not (tmp_path / "report.html.tmp").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_torch_save_over_a_full_disk_is_recognised_through_its_runtime_error(
    tmp_path: Path,
) -> None:
    """torch.save's own error over ENOSPC into a path is a RuntimeError ("unexpected pos") that
    names nothing; into an open file, as save_checkpoint writes it, the OSError is raised or rides
    along as
    the context (by buffering); safetensors only quotes it ("os error 28")."""
    with open("/dev/full", "wb", buffering=0) as fh, pytest.raises((RuntimeError, OSError)) as err:
        torch.save({"x": torch.zeros(100_000)}, fh)
    cause = disk_cause(err.value)
    assert cause is not None and cause.errno == errno.ENOSPC
    quoted = Exception("Error while serializing: I/O error: No space left on device (os error 28)")
    assert disk_cause(quoted) is not None and disk_cause(Exception("(os error 2)")) is None
    assert disk_cause(OSError(errno.ECONNREFUSED, "refused")) is None


def test_write_atomic_keeps_the_previous_file_and_other_errors_pass_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "metrics.json"
    target.write_text("old")
    monkeypatch.setattr(
        paravt.jsonl, "_write_synced", _fail_on_call(1, errno.EACCES, paravt.jsonl._write_synced)
    )
    with pytest.raises(
        DiskError,
        match="cannot write the eval metrics .*metrics.json: Permission denied; kept: "
        "the previous metrics.json, unchanged",
    ):
        paravt.jsonl.write_atomic(target, "new", "the eval metrics")
    assert target.read_text() == "old"

    def boom(*_: Any) -> None:
        raise ValueError("not a disk problem")

    monkeypatch.setattr(paravt.jsonl, "_write_synced", boom)
    with pytest.raises(ValueError):
        paravt.jsonl.write_atomic(target, "new", "x")
