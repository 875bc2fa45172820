"""Step metrics: always a JSONL file (``train_log.jsonl``, written and read through `paravt.jsonl`),
TensorBoard too when ``verl.loggers`` lists it (the one logger list of both trainers)."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

from paravt.jsonl import append_jsonl, read_jsonl, rewrite_jsonl

log = logging.getLogger(__name__)


class MetricsLogger:
    def __init__(self, run_dir: Path, *, name: str, kind: str, config: dict[str, Any], resume: bool = False,
                 tensorboard: bool = False) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "run.json").write_text(json.dumps({"name": name, "kind": kind, "config": config}, indent=1))
        self.path = self.run_dir / "train_log.jsonl"
        if not resume and self.path.exists():
            self.path.unlink()
        self._tb = None
        if tensorboard:  # only when asked: no empty tb/ beside every run
            try:
                from torch.utils.tensorboard import SummaryWriter  # optional dependency

                self._tb = SummaryWriter(str(self.run_dir / "tb"))
            except ImportError:
                log.warning("tensorboard is a logger but torch.utils.tensorboard cannot be imported; pip install tensorboard")

    def truncate_after(self, step: int) -> None:
        """On resume: forget lines logged after the checkpoint (they will be logged again)."""
        if not self.path.exists():
            return
        rewrite_jsonl(self.path, [r for r in read_jsonl(self.path) if _step(r) <= step])

    def log(self, step: int, metrics: dict[str, float]) -> None:
        row = {"step": step, **{k: _clean(v) for k, v in metrics.items()}}
        append_jsonl(self.path, [row], fsync=False)  # a torn last line (killed run) is ended first
        if self._tb is not None:
            for k, v in row.items():
                if k != "step" and isinstance(v, (int, float)) and v is not None:
                    self._tb.add_scalar(k, v, step)

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()


def _step(row: dict[str, Any]) -> int:
    try:
        return int(row.get("step", -1))
    except (TypeError, ValueError):
        return 1 << 60


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v
