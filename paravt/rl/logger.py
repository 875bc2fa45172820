"""Step metrics: always a JSONL file (``train_log.jsonl``, written and read through `paravt.jsonl`),
then every tracker ``logging.loggers`` lists (`paravt.tracking`: tensorboard, wandb, mlflow), with
each step's sampled rollouts as a table. The ONE logger list of both trainers (the verl render
passes it to verl)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paravt.jsonl import append_jsonl, read_jsonl, rewrite_jsonl
from paravt.tracking import Trackers, TrackingSettings


class MetricsLogger:
    def __init__(
        self,
        run_dir: Path,
        *,
        name: str,
        kind: str,
        config: dict[str, Any],
        resume: bool = False,
        tracking: TrackingSettings | None = None,
    ) -> None:
        """``resume``: continue the log (and the trackers' runs) of a run resumed from a
        checkpoint."""
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "run.json").write_text(
            json.dumps({"name": name, "kind": kind, "config": config}, indent=1)
        )
        self.path = self.run_dir / "train_log.jsonl"
        logged = _last_step(self.path) if resume else 0  # before `truncate_after` cuts it back
        if not resume and self.path.exists():
            self.path.unlink()
        self.trackers = Trackers.open(
            self.run_dir,
            tracking or TrackingSettings(()),
            config=config,
            resume=resume,
            logged_steps=logged,
        )

    def truncate_after(self, step: int) -> None:
        """On resume: forget lines logged after the checkpoint (they will be logged again)."""
        if not self.path.exists():
            return
        rewrite_jsonl(self.path, [r for r in read_jsonl(self.path) if _step(r) <= step])

    def log(
        self, step: int, metrics: Mapping[str, Any], rollouts: Sequence[Mapping[str, Any]] = ()
    ) -> None:
        """Step ``step``'s metrics (and its sampled rollouts, for the trackers' tables): the JSONL
        line first, so that a kill between the two never leaves a tracker ahead of the file."""
        row = {"step": step, **{k: _clean(v) for k, v in metrics.items()}}
        append_jsonl(self.path, [row], fsync=False)  # a torn last line (killed run) is ended first
        self.trackers.log(step, metrics, rollouts)

    def close(self, ok: bool = True) -> None:
        """``ok``: False when training ended by an exception (the trackers mark the run failed)."""
        self.trackers.close(ok)


def _last_step(path: Path) -> int:
    if not path.exists():
        return 0
    return max((s for s in (_step(r) for r in read_jsonl(path)) if s < 1 << 60), default=0)


def _step(row: dict[str, Any]) -> int:
    try:
        return int(row.get("step", -1))
    except (TypeError, ValueError):
        return 1 << 60


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v
