"""The TensorBoard adapter: ``OUT/tb`` event files, created only when ``tensorboard`` is listed.

Each step's scalars end with ``training/global_step`` and are flushed to the file before the step
counts as logged. A resumed run reads the steps the files hold (`paravt.tracking.stores`) and
opens its writer with ``purge_step`` just after them, so a step cut short by a kill is discarded
by TensorBoard and every step reads back once."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paravt.tracking.settings import TrackingSettings, require
from paravt.tracking.stores import STEP_KEY, tensorboard_steps
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
        prev: Mapping[str, Any] | None,
    ) -> None:
        root = run_dir / "tb"
        self.held: set[int] = tensorboard_steps(root) if prev is not None else set()
        # after the held steps; a fresh run (or one holding none) voids whatever OUT/tb had
        purge = max(self.held) + 1 if self.held else (1 if root.exists() else None)
        self._root, self._writer = root, require("tensorboard").SummaryWriter
        self._w = self._open(purge)
        self.state: dict[str, Any] = {"dir": str(root)}
        if prev is None and config is not None:  # the TEXT tab's config (hparams need a metric)
            text = json.dumps(dict(config), indent=1, default=str)
            self._w.add_text("config", "```\n" + text + "\n```", 0)
        if prev is None and s.tags:  # kind, variant, seed, commit
            self._w.add_text("tags", "\n".join(f"- {k}: `{v}`" for k, v in s.tags), 0)

    def log(
        self, step: int, metrics: Mapping[str, Any], rollouts: Sequence[Mapping[str, Any]]
    ) -> None:
        for k, v in numeric(metrics).items():
            self._w.add_scalar(k, v, step)
        if rollouts:  # a markdown table in the TEXT tab
            self._w.add_text("rollouts", _markdown(*rollout_table(rollouts)), step)
        self._w.add_scalar(STEP_KEY, float(step), step)  # last: the step is whole when it is there
        self._w.flush()

    def log_tables(
        self, step: int, tables: Mapping[str, tuple[list[str], list[list[Any]]]]
    ) -> None:
        for name, (columns, rows) in tables.items():
            self._w.add_text(name, _markdown(columns, rows), step)
        self._w.flush()

    def rewind(self, step: int) -> None:
        """Forget the steps after ``step`` (a resumed run re-runs them): a writer reopened with
        ``purge_step=step + 1`` makes TensorBoard's reader discard what was written after it."""
        self._w.close()
        self._w = self._open(step + 1)
        self.held = {s for s in self.held if s <= step}

    def _open(self, purge: int | None) -> Any:
        """A writer whose new event file sorts after every file ``OUT/tb`` holds. TensorBoard reads
        the files in name order and applies a purge to what it read BEFORE it; a name starts with
        the second the file was opened, and within one second its other parts (host, pid, a
        counter) compare as text ("…10" < "…9"), so a file opened in the same second as an older
        one can be read first and the purge void nothing. Waits for the next second when needed
        (at most one: only a resume within the second of the last file)."""
        newest = max(
            (_opened_at(f.name) for f in self._root.glob("events.out.tfevents.*")), default=0
        )
        while int(time.time()) <= newest:
            time.sleep(0.05)
        return self._writer(str(self._root), purge_step=purge)

    def close(self, status: str = "FINISHED") -> None:
        self._w.close()


def _opened_at(name: str) -> int:
    """The second an event file was opened, from its name (``events.out.tfevents.SECONDS.…``)."""
    part = name.split(".")[3] if name.count(".") >= 3 else ""
    return int(part) if part.isdigit() else 0


def _markdown(columns: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _md(v: Any) -> str:
    return str(v).replace("|", "\\|").replace("\n", "<br>")
