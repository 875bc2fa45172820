"""Checkpoints that are never half-written: write to ``<name>.tmp``, then rename into place.

A checkpoint directory holds ``model/`` (an HF directory: weights, config, processor, tokenizer —
loadable by ``paravt.models.loading.load_policy`` and by vLLM), ``trainer.pt`` (optimizer state and
every RNG state) and ``state.json`` (step, epoch, data position, anything the trainer needs to
continue bit-for-bit).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

CKPT_PREFIX = "step_"


def rng_state() -> dict[str, Any]:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def save_checkpoint(root: Path, step: int, *, model: Any, processor: Any, optimizer: torch.optim.Optimizer | None,
                    state: dict[str, Any]) -> Path:
    """Write ``root/step_NNNNNN`` atomically and return it."""
    final = Path(root) / f"{CKPT_PREFIX}{step:06d}"
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "model").mkdir(parents=True)
    model.save_pretrained(tmp / "model")
    processor.save_pretrained(tmp / "model")
    torch.save({"optimizer": optimizer.state_dict() if optimizer else None, "rng": rng_state()}, tmp / "trainer.pt")
    (tmp / "state.json").write_text(json.dumps({**state, "step": step}, indent=1))
    if final.exists():
        old = final.with_name(final.name + ".old")
        final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old)
    else:
        tmp.rename(final)
    return final


def latest_checkpoint(root: Path) -> Path | None:
    """The newest complete checkpoint under ``root`` (``*.tmp`` leftovers of a crash are ignored)."""
    root = Path(root)
    if not root.is_dir():
        return None
    done = sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith(CKPT_PREFIX)
                  and p.name[len(CKPT_PREFIX):].isdigit() and (p / "state.json").is_file())
    return done[-1] if done else None


def load_trainer_state(ckpt: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(state.json, trainer.pt contents) of a checkpoint."""
    state = json.loads((ckpt / "state.json").read_text())
    blob = torch.load(ckpt / "trainer.pt", weights_only=False)
    return state, blob
