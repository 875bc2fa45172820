"""The wandb adapter: one wandb run per training run, continued on resume (same id,
``resume="allow"``).

``mode`` is ``wandb.init(mode=...)`` from ``logging.wandb_mode`` (no environment variable);
offline writes ``OUT/wandb/offline-run-*`` and a resumed offline run adds a directory with the SAME
run id, which ``wandb sync`` uploads into one run."""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paravt.errors import ConfigError, TrackerError
from paravt.tracking.settings import TrackingSettings, require
from paravt.tracking.stores import STEP_KEY, cut_wandb_history, wandb_steps
from paravt.tracking.table import numeric, rollout_table
from paravt.tracking.tags import wandb_tags

#: An offline run stops (one line) when the disk holding ``OUT/wandb`` has less free space.
MIN_FREE_BYTES = 4 << 20


class WandbRun:
    name = "wandb"

    def __init__(
        self,
        run_dir: Path,
        s: TrackingSettings,
        *,
        run_name: str,
        config: Mapping[str, Any] | None,
        prev: Mapping[str, Any] | None,
    ) -> None:
        self._wandb = wandb = require("wandb")
        # wandb's own ids are 8 chars of [a-z0-9]
        self.id = str(prev["id"]) if prev else uuid.uuid4().hex[:12]
        self.held: set[int] = wandb_steps(run_dir / "wandb", self.id) if prev else set()
        # the run files of the earlier processes (listed before this one writes its own)
        self._earlier = sorted((run_dir / "wandb").glob(f"*run-*/run-{self.id}.wandb"))
        job_type, tags = wandb_tags(s.tags)  # the kind; variant, seed, commit
        self.state = {
            "id": self.id,
            "project": s.project,
            "entity": s.wandb_entity,
            "mode": s.wandb_mode,
            "name": run_name,
            "group": s.group,
            "dir": str(run_dir.resolve()),
            "job_type": job_type,
            "tags": tags,
        }
        self._root = run_dir / "wandb"
        self._disk_error: OSError | None = None  # the first write error of wandb's own log file
        if s.wandb_mode == "offline":
            self._root.mkdir(parents=True, exist_ok=True)
            self._check_disk()
        self._run = _init(wandb, self.state, config=dict(config) if config is not None else None)
        for h in logging.getLogger("wandb").handlers:  # its debug.log: a failed write, kept quiet
            h.handleError = self._handler_error  # type: ignore[method-assign]

    def _handler_error(self, record: logging.LogRecord) -> None:
        """Python logging prints a traceback per failed write (hundreds on a full disk); the
        first error is kept instead, and the next step stops the run with it, in one line."""
        err = sys.exc_info()[1]
        if self._disk_error is None and isinstance(err, OSError):
            self._disk_error = err

    def _check_disk(self) -> None:
        """`TrackerError` when the disk holding ``OUT/wandb`` is full (wandb's writer drops what it
        cannot write without a word: a full disk would lose the run's steps silently)."""
        free = shutil.disk_usage(self._root).free
        if self._disk_error is None and free >= MIN_FREE_BYTES:
            return
        for h in list(logging.getLogger("wandb").handlers):  # nothing more to its debug.log
            if isinstance(h, logging.FileHandler):
                logging.getLogger("wandb").removeHandler(h)
                with contextlib.suppress(OSError):
                    h.close()
        why = (
            f"writing its log failed ({self._disk_error.strerror or self._disk_error})"
            if self._disk_error is not None
            else f"{free >> 10} KiB free, under the {MIN_FREE_BYTES >> 20} MiB an offline run "
            "needs (wandb drops what it cannot write without a word)"
        )
        raise TrackerError(
            f"the disk holding {self._root} is full: {why}; free space or move the run (out_dir)"
        )

    def log(
        self, step: int, metrics: Mapping[str, Any], rollouts: Sequence[Mapping[str, Any]]
    ) -> None:
        if self.state["mode"] == "offline" or self._disk_error is not None:
            self._check_disk()
        data: dict[str, Any] = dict(numeric(metrics))
        if rollouts:
            columns, rows = rollout_table(rollouts)
            data["rollouts"] = self._wandb.Table(columns=columns, data=rows)
        data[STEP_KEY] = float(step)
        self._run.log(data, step=step)

    def log_tables(
        self, step: int, tables: Mapping[str, tuple[list[str], list[list[Any]]]]
    ) -> None:
        self._run.log(
            {n: self._wandb.Table(columns=c, data=rows) for n, (c, rows) in tables.items()},
            step=step,
        )

    def rewind(self, step: int) -> None:
        """Forget the steps after ``step`` (a resumed run re-runs them): an offline run's earlier
        files are cut before them (`cut_wandb_history`); an online run's history on the server
        only grows, so it keeps the first attempt's values of those steps."""
        if self.state["mode"] != "offline":
            return
        for path in self._earlier:
            cut_wandb_history(path, step)
        self.held = {s for s in self.held if s <= step}

    def close(self, status: str = "FINISHED") -> None:
        """Flushes every buffered step into the run's files (a resume reads them back)."""
        self._run.finish(exit_code={"FINISHED": 0, "KILLED": 143}.get(status, 1))

    @staticmethod
    def attach(state: Mapping[str, Any], path: Path) -> None:
        """Add ``path`` (the report) as an artifact of the finished run ``state`` describes."""
        wandb = require("wandb")
        run = _init(wandb, state, config=None)
        artifact = wandb.Artifact(f"report-{state['id']}", type="report")
        artifact.add_file(str(path))
        run.log_artifact(artifact)
        run.finish()


def _init(wandb: Any, state: Mapping[str, Any], *, config: dict[str, Any] | None) -> Any:
    try:
        return wandb.init(
            project=state["project"],
            entity=state.get("entity"),
            name=state.get("name"),
            group=state.get("group"),
            job_type=state.get("job_type"),
            tags=state.get("tags") or None,
            id=state["id"],
            resume="allow",
            mode=state["mode"],
            dir=state["dir"],
            config=config,
            settings=wandb.Settings(console="off", quiet=True),
        )
    except Exception as err:  # noqa: BLE001 - wandb raises its own kinds (login, network, usage)
        why = (str(err).splitlines() or [type(err).__name__])[0]
        fix = (
            f"check that {state['dir']}/wandb is writable and wandb is installed whole"
            if state["mode"] == "offline"
            else "run `wandb login`, or set logging.wandb_mode=offline (no network needed)"
        )
        raise ConfigError(f"wandb.init failed in mode {state['mode']!r} ({why}); {fix}") from None
