"""Step metrics: always a JSONL file (``train_log.jsonl``, written and read through `paravt.jsonl`),
then every tracker ``logging.loggers`` lists (`paravt.tracking`: tensorboard, wandb, mlflow), with
each step's sampled rollouts as a table. The ONE logger list of both trainers (the verl render
passes it to verl). On resume the trackers get back every step up to the checkpoint that their
stores lack (`Trackers.backfill`), from this file and ``rollouts.jsonl``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paravt.jsonl import append_jsonl, read_jsonl, rewrite_jsonl
from paravt.rl.rollouts import read_rollouts
from paravt.tracking import Trackers, TrackingSettings
from paravt.tracking.stores import step_rows


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
        if not resume and self.path.exists():
            self.path.unlink()
        self.cumulative_tokens = 0.0  # perf/cumulative_tokens through the last logged step
        self.last: dict[str, Any] = {}  # the last logged step's metrics (the model card's)
        self.trackers = Trackers.open(
            self.run_dir, tracking or TrackingSettings(()), config=config, resume=resume
        )

    def truncate_after(self, step: int) -> list[int]:
        """On resume: forget lines logged after the checkpoint (they will be logged again, in the
        trackers too: `Trackers.rewind`), and re-send to each tracker the steps up to it that its
        store lacks; returns those steps."""
        if not self.path.exists():
            return []
        kept = [r for r in read_jsonl(self.path) if _step(r) <= step]
        rewrite_jsonl(self.path, kept)
        last = kept[-1].get("perf/cumulative_tokens") if kept else None
        self.cumulative_tokens = float(last) if isinstance(last, (int, float)) else 0.0
        if not self.trackers.runs:
            return []
        self.trackers.rewind(step)
        rollouts: dict[int, list[dict[str, Any]]] = {}
        for r in read_rollouts(self.run_dir):
            if isinstance(r.get("step"), int) and r["step"] <= step:
                rollouts.setdefault(r["step"], []).append(r)
        return self.trackers.backfill(step_rows(kept), rollouts)

    def log(
        self, step: int, metrics: Mapping[str, Any], rollouts: Sequence[Mapping[str, Any]] = ()
    ) -> None:
        """Step ``step``'s metrics (and its sampled rollouts, for the trackers' tables): the JSONL
        line first, so that a kill between the two never leaves a tracker ahead of the file."""
        row = {"step": step, **{k: _clean(v) for k, v in metrics.items()}}
        self.last = dict(metrics)
        append_jsonl(self.path, [row], fsync=False)  # a torn last line (killed run) is ended first
        self.trackers.log(step, metrics, rollouts)

    def close(self, status: str = "FINISHED") -> None:
        """``status``: FINISHED, FAILED (training ended by an exception) or KILLED (a signal)."""
        self.trackers.close(status)


def _step(row: dict[str, Any]) -> int:
    try:
        return int(row.get("step", -1))
    except (TypeError, ValueError):
        return 1 << 60


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v
