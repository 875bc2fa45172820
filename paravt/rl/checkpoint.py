"""Checkpoints that are never half-written: write to ``<name>.tmp``, then rename into place.

A checkpoint directory holds ``model/`` (an HF directory: weights, config, processor, tokenizer —
loadable by ``paravt.models.hf.loading.load_policy`` and by vLLM), ``trainer.pt`` (optimizer state
and every RNG state), ``state.json`` (step, epoch, data position, anything the trainer needs to
continue bit-for-bit) and, written LAST, ``COMPLETE.json``: the size and SHA-256 of every other
file. A checkpoint is used only if that marker exists and every file still matches it
(``verify_checkpoint``); ``resume_point`` walks back from the newest step to the newest checkpoint
that verifies and names each one it skipped and why (a truncated ``trainer.pt`` or
``model.safetensors``, a garbage ``state.json``, a deleted file, a checkpoint without a marker). A
write that finds the disk full or the path read-only removes its
partial directory and stops the run with one line naming what was kept (``save_checkpoint``,
``save_final_model``).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from paravt.errors import disk_write

CKPT_PREFIX = "step_"
MARKER = "COMPLETE.json"


def rng_state() -> dict[str, Any]:
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def save_checkpoint(
    root: Path,
    step: int,
    *,
    model: Any,
    processor: Any,
    optimizer: torch.optim.Optimizer | None,
    state: dict[str, Any],
    write_config: Callable[[Path], None] | None = None,
) -> Path:
    """Write ``root/step_NNNNNN`` atomically and return it; ``write_config`` adds the run's
    settings and model card to its ``model/``. A full disk or a refused write
    (``paravt.errors.disk_write``) removes the partial ``.tmp`` and is one `DiskError` naming the
    checkpoint and the newest one kept, which ``--resume`` uses."""
    final = Path(root) / f"{CKPT_PREFIX}{step:06d}"
    tmp = final.with_name(final.name + ".tmp")
    with disk_write(final, "checkpoint", lambda: _kept(root, tmp)):
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "model").mkdir(parents=True)
        model.save_pretrained(tmp / "model")
        processor.save_pretrained(tmp / "model")
        if write_config is not None:
            write_config(tmp / "model")
        with open(
            tmp / "trainer.pt", "wb"
        ) as fh:  # a file object: a failed write chains its OSError
            torch.save(
                {"optimizer": optimizer.state_dict() if optimizer else None, "rng": rng_state()}, fh
            )
        (tmp / "state.json").write_text(json.dumps({**state, "step": step}, indent=1))
        _write_marker(tmp)
    if final.exists():
        old = final.with_name(final.name + ".old")
        final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old)
    else:
        tmp.rename(final)
    return final


def _kept(root: Path, partial: Path) -> str:
    """What a failed checkpoint write leaves (the partial directory is removed first)."""
    shutil.rmtree(partial, ignore_errors=True)
    last = latest_checkpoint(root)
    return (
        f"the partial {partial.name} was removed; --resume continues from {last}"
        if last is not None
        else f"the partial {partial.name} was removed; no earlier checkpoint, so --resume starts "
        "over"
    )


def save_final_model(
    path: Path,
    *,
    model: Any,
    processor: Any,
    write_config: Callable[[Path], None],
    checkpoints: Path,
) -> None:
    """The run's final model at ``path`` (written to ``<path>.tmp``, then renamed: whole or
    absent); ``write_config`` adds the run's settings. A full disk or a refused write is one
    `DiskError` naming ``path`` and the checkpoint ``--resume`` uses."""
    tmp = path.with_name(path.name + ".tmp")
    with disk_write(path, "the final model", lambda: _kept(checkpoints, tmp)):
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        model.save_pretrained(tmp)
        processor.save_pretrained(tmp)
        write_config(tmp)
        if path.exists():
            shutil.rmtree(path)
        tmp.rename(path)


def _write_marker(ckpt: Path) -> None:
    """``COMPLETE.json`` with every file's size and SHA-256, each file flushed to disk first; the
    marker itself is written to a temporary name and renamed, so it is whole or absent."""
    files = {}
    for path in sorted(p for p in ckpt.rglob("*") if p.is_file()):
        with open(path, "rb") as fh:
            os.fsync(fh.fileno())
        files[path.relative_to(ckpt).as_posix()] = {
            "size": path.stat().st_size,
            "sha256": _sha256(path),
        }
    tmp = ckpt / (MARKER + ".tmp")
    with open(tmp, "w") as fh:
        json.dump({"files": files}, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.rename(ckpt / MARKER)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_REQUIRED = ("state.json", "trainer.pt", "model/config.json")


def verify_checkpoint(ckpt: Path) -> str | None:
    """Why ``ckpt`` cannot be resumed from, or None when its marker exists and every file it
    lists (at least ``state.json``, ``trainer.pt``, the model config and weights) has the recorded
    size and SHA-256 and ``state.json`` holds this directory's step."""
    marker = ckpt / MARKER
    if not marker.is_file():
        return f"no {MARKER} (the write never finished, or it predates checksummed checkpoints)"
    try:
        files = json.loads(marker.read_text())["files"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        files = None
    if not isinstance(files, dict) or not all(isinstance(m, dict) for m in files.values()):
        return f"{MARKER} is unreadable"
    missing = [f for f in _REQUIRED if f not in files]
    if missing or not any(
        f.startswith("model/") and f.endswith((".safetensors", ".bin")) for f in files
    ):
        return f"{MARKER} does not list {', '.join(missing) or 'the model weights'}"
    for rel, meta in files.items():
        path = ckpt / rel
        if not path.is_file():
            return f"{rel} is missing"
        if path.stat().st_size != meta.get("size"):
            return (
                f"{rel} has {path.stat().st_size} bytes, {meta.get('size')} were written "
                "(truncated?)"
            )
        if _sha256(path) != meta.get("sha256"):
            return f"{rel} does not match its SHA-256 (corrupted)"
    try:
        step = json.loads((ckpt / "state.json").read_text())["step"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return "state.json has no step"
    if f"{CKPT_PREFIX}{int(step):06d}" != ckpt.name:
        return f"state.json says step {step}, the directory is {ckpt.name}"
    return None


def step_of(ckpt: Path) -> int:
    """The step in a ``step_NNNNNN`` directory name."""
    return int(ckpt.name[len(CKPT_PREFIX) :])


def verified_checkpoints(root: Path) -> list[Path]:
    """Every ``step_NNNNNN`` checkpoint under ``root`` that verifies, oldest first."""
    return [p for p in _finished_dirs(root) if verify_checkpoint(p) is None]


def _finished_dirs(root: Path) -> list[Path]:
    """``step_NNNNNN`` directories, oldest first (``*.tmp``/``*.old`` leftovers of a crash
    excluded)."""
    if not root.is_dir():
        return []
    return sorted(
        p
        for p in root.iterdir()
        if p.is_dir() and p.name.startswith(CKPT_PREFIX) and p.name[len(CKPT_PREFIX) :].isdigit()
    )


@dataclass(frozen=True)
class ResumePoint:
    checkpoint: Path | None  # the newest checkpoint that verifies; None: start from scratch
    skipped: tuple[
        tuple[Path, str], ...
    ]  # newer checkpoints passed over, newest first, with the reason


def resume_point(root: Path) -> ResumePoint:
    """Walk back from the newest checkpoint under ``root`` to the newest one that verifies."""
    skipped: list[tuple[Path, str]] = []
    for ckpt in reversed(_finished_dirs(Path(root))):
        reason = verify_checkpoint(ckpt)
        if reason is None:
            return ResumePoint(ckpt, tuple(skipped))
        skipped.append((ckpt, reason))
    return ResumePoint(None, tuple(skipped))


def latest_checkpoint(root: Path) -> Path | None:
    """The newest checkpoint under ``root`` that verifies (see ``resume_point``)."""
    return resume_point(root).checkpoint


def load_trainer_state(ckpt: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(state.json, trainer.pt contents) of a checkpoint."""
    state = json.loads((ckpt / "state.json").read_text())
    blob = torch.load(ckpt / "trainer.pt", weights_only=False)
    return state, blob
