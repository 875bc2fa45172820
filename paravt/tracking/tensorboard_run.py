"""The TensorBoard adapter: ``OUT/tb`` event files, created only when ``tensorboard`` is listed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paravt.tracking.settings import TrackingSettings, require
from paravt.tracking.table import numeric, rollout_table


class TensorboardRun:
    name = "tensorboard"

    def __init__(
        self,
        run_dir: Path,
        s: TrackingSettings,
        *,
        run_name: str,
        config: Mapping[str, Any] | None,
        run_id: str | None,
    ) -> None:
        self._w = require("tensorboard").SummaryWriter(str(run_dir / "tb"))
        self.state: dict[str, Any] = {}

    def log(
        self, step: int, metrics: Mapping[str, Any], rollouts: Sequence[Mapping[str, Any]]
    ) -> None:
        for k, v in numeric(metrics).items():
            self._w.add_scalar(k, v, step)
        if rollouts:  # a markdown table in the TEXT tab
            columns, rows = rollout_table(rollouts)
            lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
            self._w.add_text("rollouts", "\n".join(lines), step)

    def close(self, ok: bool = True) -> None:
        self._w.close()


def _md(v: Any) -> str:
    return str(v).replace("|", "\\|").replace("\n", "<br>")
