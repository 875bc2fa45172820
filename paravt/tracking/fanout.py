"""`Trackers`: every tracker ``logging.loggers`` lists, for one training run; `attach_report`.

A resumed run continues each tracker's run (its id is in ``OUT/tracking.json``) and skips the
steps the trackers already hold (``logged_through``: the last step logged before the kill, read from
``train_log.jsonl``, which is written before the trackers). On the CPU a resumed run re-computes
those steps bit for bit, so nothing is lost; a kill between the two writes leaves a one-step gap in
a tracker, never a duplicated step."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from paravt.errors import ParavtError
from paravt.tracking.mlflow_run import MlflowRun
from paravt.tracking.settings import TrackingSettings
from paravt.tracking.state import FILE as STATE_FILE
from paravt.tracking.state import read_state, write_state
from paravt.tracking.tensorboard_run import TensorboardRun
from paravt.tracking.wandb_run import WandbRun

log = logging.getLogger(__name__)


class TrackerRun(Protocol):
    name: str
    state: dict[str, Any]  # what tracking.json keeps for a resume (run id, store, mode)

    def log(
        self, step: int, metrics: Mapping[str, Any], rollouts: Sequence[Mapping[str, Any]]
    ) -> None: ...

    def close(self, ok: bool = True) -> None: ...


ADAPTERS: dict[str, type[WandbRun] | type[MlflowRun] | type[TensorboardRun]] = {
    "tensorboard": TensorboardRun,
    "wandb": WandbRun,
    "mlflow": MlflowRun,
}
ATTACH = {"wandb": WandbRun.attach, "mlflow": MlflowRun.attach}


class Trackers:
    def __init__(self, runs: list[TrackerRun], logged_through: int) -> None:
        self.runs, self.logged_through = runs, logged_through

    @classmethod
    def open(
        cls,
        run_dir: str | Path,
        s: TrackingSettings,
        *,
        config: Mapping[str, Any] | None,
        resume: bool,
        logged_steps: int = 0,
    ) -> Trackers:
        """Start (or, with ``resume``, continue) every listed tracker's run; ``logged_steps``: the
        last step of ``train_log.jsonl`` before the resume cut it back to the checkpoint."""
        run_dir = Path(run_dir)
        old = read_state(run_dir) if resume else {}
        through = max(int(old.get("logged_through", 0)), logged_steps) if resume else 0
        name = s.run_name or run_dir.resolve().name
        runs: list[TrackerRun] = []
        try:
            for t in s.trackers:
                prev = old.get(t) or {}
                runs.append(
                    ADAPTERS[t](
                        run_dir,
                        s,
                        run_name=name,
                        config=config,
                        run_id=prev.get("id") or prev.get("run_id"),
                    )
                )
        except BaseException:
            for r in runs:
                r.close(False)
            raise
        if runs:
            write_state(run_dir, {"logged_through": through, **{r.name: r.state for r in runs}})
        elif not resume:
            (run_dir / STATE_FILE).unlink(
                missing_ok=True
            )  # a fresh run: no stale ids for `attach_report`
        return cls(runs, through)

    def log(
        self, step: int, metrics: Mapping[str, Any], rollouts: Sequence[Mapping[str, Any]] = ()
    ) -> None:
        if step <= self.logged_through:  # the tracker holds this step from before the kill
            return
        for r in self.runs:
            r.log(step, metrics, rollouts)

    def close(self, ok: bool = True) -> None:
        for r in self.runs:
            r.close(ok)


def attach_report(run_dirs: Iterable[str | Path], report: str | Path) -> list[str]:
    """Add ``report`` (report.html) as an artifact of the wandb and MLflow runs of every training
    run under ``run_dirs`` (searched recursively for ``tracking.json``); returns ``"tracker:run
    id"``
    of each. A tracker that cannot take it is named in a warning; the report itself stands."""
    done = []
    found = {p.parent.resolve() for d in run_dirs for p in Path(d).rglob(STATE_FILE)}
    for d in sorted(found):
        state = read_state(d)
        for name, attach in ATTACH.items():
            if name not in state:
                continue
            try:
                attach(state[name], Path(report))
                done.append(f"{name}:{state[name].get('id') or state[name].get('run_id')}")
            except (ParavtError, OSError) as err:
                log.warning("report not attached to the %s run of %s: %s", name, d, err)
    return done
