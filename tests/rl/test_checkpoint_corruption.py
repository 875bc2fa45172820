"""Issue 13 item 11: a corrupted latest checkpoint is skipped, named, and resume uses the previous
one.

Reproduced break: a truncated ``trainer.pt`` or ``model.safetensors``, a garbage ``state.json`` or
a deleted file in the newest checkpoint made ``--resume`` exit with a traceback.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from paravt.jsonl import read_jsonl as read_log
from paravt.models.hf.loading import LoadedPolicy
from paravt.rl.checkpoint import MARKER, resume_point, save_checkpoint, verify_checkpoint
from paravt.rl.loop import run_training

sys.path.insert(0, str(Path(__file__).parent))
from test_trainer import _cfg, synth  # noqa: E402,F401  (the module's synth-data fixture)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _weights(ckpt: Path) -> Path:
    (weights,) = (ckpt / "model").glob("*.safetensors")
    return weights


CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated trainer.pt": (lambda c: _truncate(c / "trainer.pt"), "trainer.pt has"),
    "truncated weights": (lambda c: _truncate(_weights(c)), ".safetensors has"),
    "garbage state.json": (
        lambda c: (c / "state.json").write_text('{"step": 2, "epoch": "x"}'),
        "state.json",
    ),
    "same-size bit flip": (
        lambda c: (c / "trainer.pt").write_bytes(
            bytes(
                [b ^ 0xFF if i == 100 else b for i, b in enumerate((c / "trainer.pt").read_bytes())]
            )
        ),
        "trainer.pt does not match its SHA-256",
    ),
    "deleted config": (
        lambda c: (c / "model" / "config.json").unlink(),
        "model/config.json is missing",
    ),
    "no marker": (lambda c: (c / MARKER).unlink(), f"no {MARKER}"),
    "garbage marker": (lambda c: (c / MARKER).write_text("[1, 2"), f"{MARKER} is unreadable"),
}


def _save(root: Path, step: int, policy: LoadedPolicy) -> Path:
    return save_checkpoint(
        root,
        step,
        model=policy.model,
        processor=policy.processor,
        optimizer=None,
        state={"kind": "sft"},
    )


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_resume_walks_back_past_a_corrupted_latest_checkpoint(
    name: str, tmp_path: Path, policy
) -> None:
    good, bad = _save(tmp_path, 1, policy), _save(tmp_path, 2, policy)
    assert verify_checkpoint(good) is None and verify_checkpoint(bad) is None
    corrupt, expected = CORRUPTIONS[name]
    corrupt(bad)
    point = resume_point(tmp_path)
    assert point.checkpoint == good
    assert len(point.skipped) == 1 and point.skipped[0][0] == bad
    assert expected in point.skipped[0][1]


def test_marker_lists_every_file_and_is_written_last(tmp_path: Path, policy) -> None:
    ckpt = _save(tmp_path, 3, policy)
    files = json.loads((ckpt / MARKER).read_text())["files"]
    on_disk = {p.relative_to(ckpt).as_posix() for p in ckpt.rglob("*") if p.is_file()} - {MARKER}
    assert set(files) == on_disk and {"state.json", "trainer.pt", "model/config.json"} <= on_disk


def test_no_checkpoint_verifies_means_start_from_scratch_with_reasons(
    tmp_path: Path, policy
) -> None:
    only = _save(tmp_path, 1, policy)
    (only / "trainer.pt").unlink()
    point = resume_point(tmp_path)
    assert point.checkpoint is None and point.skipped == ((only, "trainer.pt is missing"),)


def test_sft_resume_past_a_truncated_latest_checkpoint_equals_an_uninterrupted_run(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str, caplog: pytest.LogCaptureFixture
) -> None:
    sft = {
        "max_steps": 6,
        "save_every": 2,
        "batch_size": 1,
        "warmup_steps": 2,
    }
    straight = run_training(
        _cfg(tmp_path / "a", synth / "sft.parquet", tiny_qwen3_dir, sft=sft),
        kind="sft",
        progress=False,
    )
    cfg = _cfg(tmp_path / "b", synth / "sft.parquet", tiny_qwen3_dir, sft=sft)
    killed = run_training(
        cfg, kind="sft", progress=False, stop_after=5
    )  # checkpoints at steps 2 and 4
    latest = killed / "checkpoints" / "step_000004"
    _truncate(latest / "trainer.pt")
    with caplog.at_level(logging.WARNING, logger="paravt.rl.loop"):
        resumed = run_training(cfg, kind="sft", resume=True, progress=False)
    assert f"skipping checkpoint {latest}: trainer.pt has" in caplog.text
    assert "continuing from" in caplog.text and "step_000002" in caplog.text
    a, b = read_log(straight / "train_log.jsonl"), read_log(resumed / "train_log.jsonl")
    assert [r["step"] for r in b] == [1, 2, 3, 4, 5, 6]
    assert [r["train/loss"] for r in a] == [
        r["train/loss"] for r in b
    ]  # steps 3-6 recomputed from step 2, exactly
