"""The wandb adapter: one wandb run per training run, continued on resume (same id,
``resume="allow"``).

``mode`` is ``wandb.init(mode=...)`` from ``logging.wandb_mode`` (no environment variable);
offline writes ``OUT/wandb/offline-run-*`` and a resumed offline run adds a directory with the SAME
run id, which ``wandb sync`` uploads into one run."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paravt.errors import ConfigError
from paravt.tracking.settings import TrackingSettings, require
from paravt.tracking.stores import STEP_KEY, wandb_steps
from paravt.tracking.table import numeric, rollout_table


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
        self.state = {
            "id": self.id,
            "project": s.project,
            "entity": s.wandb_entity,
            "mode": s.wandb_mode,
            "name": run_name,
            "group": s.group,
            "dir": str(run_dir.resolve()),
        }
        self._run = _init(wandb, self.state, config=dict(config) if config is not None else None)

    def log(
        self, step: int, metrics: Mapping[str, Any], rollouts: Sequence[Mapping[str, Any]]
    ) -> None:
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
