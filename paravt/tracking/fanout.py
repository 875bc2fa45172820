"""`Trackers`: every tracker ``logging.loggers`` lists, for one training run; `attach_report`.

Nothing lost, nothing twice: each tracker knows the steps it holds (``held``: read from its own
store on resume, `paravt.tracking.stores`; a step counts once the tracker's call returned, after
the flush TensorBoard needs). A resumed run re-sends, from ``train_log.jsonl`` and
``rollouts.jsonl``, every step up to the checkpoint that a tracker lacks (`backfill`), and sends
each re-run step only to the trackers that lack it. ``OUT/tracking.json`` keeps each tracker's
run id and the last step it held.

Every call is bounded (``logging.tracker_timeout_s``, `paravt.tracking.bounded`); one that fails
stops the run with one line, or with ``logging.tracker_errors=warn`` is named in one warning and
that tracker is dropped for the rest of the run."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from paravt.errors import ParavtError, TrackerError
from paravt.tracking.bounded import bounded
from paravt.tracking.mlflow_run import MlflowRun
from paravt.tracking.settings import TrackingSettings
from paravt.tracking.state import FILE as STATE_FILE, read_state, write_state
from paravt.tracking.tensorboard_run import TensorboardRun
from paravt.tracking.wandb_run import WandbRun

log = logging.getLogger(__name__)


class TrackerRun(Protocol):
    name: str
    state: dict[str, Any]  # what tracking.json keeps for a resume (run id, store, mode)
    held: set[int]  # the steps the tracker's store holds

    def log(
        self, step: int, metrics: Mapping[str, Any], rollouts: Sequence[Mapping[str, Any]]
    ) -> None: ...

    def log_tables(
        self, step: int, tables: Mapping[str, tuple[list[str], list[list[Any]]]]
    ) -> None: ...

    def rewind(self, step: int) -> None: ...

    def close(self, status: str = "FINISHED") -> None: ...


ADAPTERS: dict[str, type[WandbRun] | type[MlflowRun] | type[TensorboardRun]] = {
    "tensorboard": TensorboardRun,
    "wandb": WandbRun,
    "mlflow": MlflowRun,
}
ATTACH = {"wandb": WandbRun.attach, "mlflow": MlflowRun.attach}


class Trackers:
    def __init__(self, runs: list[TrackerRun], run_dir: Path, s: TrackingSettings) -> None:
        self.runs, self.run_dir, self.s = runs, run_dir, s
        # a tracker dropped under tracker_errors=warn keeps its entry: a resume continues its run
        self.dropped: dict[str, dict[str, Any]] = {}

    def _drop(self, r: TrackerRun) -> None:
        self.runs.remove(r)
        self.dropped[r.name] = {**r.state, "logged_through": max(r.held, default=0)}

    @classmethod
    def open(
        cls,
        run_dir: str | Path,
        s: TrackingSettings,
        *,
        config: Mapping[str, Any] | None,
        resume: bool,
    ) -> Trackers:
        """Start (or, with ``resume``, continue) every listed tracker's run."""
        run_dir = Path(run_dir)
        old = read_state(run_dir) if resume else {}
        name = s.run_name or run_dir.resolve().name
        self = cls([], run_dir, s)
        try:
            for t in s.trackers:
                prev = old.get(t)

                def start(t: str = t, prev: Any = prev) -> TrackerRun:
                    return ADAPTERS[t](run_dir, s, run_name=name, config=config, prev=prev)

                run = self._call(t, start, "starting its run" if prev is None else "resuming")
                if run is not None:
                    self.runs.append(run)
                elif isinstance(prev, dict):  # warn: kept, so a later resume continues it
                    self.dropped[t] = prev
        except BaseException:
            self.close("FAILED")
            raise
        if self.runs:
            self._save()
        elif not resume:  # a fresh run: no stale ids for `attach_report`
            (run_dir / STATE_FILE).unlink(missing_ok=True)
        return self

    def _call(self, tracker: str, fn: Callable[[], Any], what: str) -> Any:
        """``fn()`` under the deadline; on failure, raise (fail) or warn and return None (warn)."""
        try:
            return bounded(fn, timeout_s=self.s.timeout_s, what=f"{tracker} ({what})")
        except TrackerError as err:
            if self.s.errors == "fail":  # the one setting that trains on: named here, not in warn
                raise TrackerError(
                    f"{err}; or set logging.tracker_errors=warn to train on without {tracker}"
                ) from None
            log.warning(
                "%s; the run goes on without %s (logging.tracker_errors=warn)", err, tracker
            )
            return None

    def log(
        self, step: int, metrics: Mapping[str, Any], rollouts: Sequence[Mapping[str, Any]] = ()
    ) -> None:
        """Step ``step`` to every tracker that lacks it; held once the tracker's call returned."""
        sent = False
        for r in list(self.runs):
            if step in r.held:  # the tracker holds this step from before the kill
                continue
            if self._guarded(r, step, metrics, rollouts):
                r.held.add(step)
                sent = True
        if sent:
            self._save()

    def _guarded(
        self,
        r: TrackerRun,
        step: int,
        metrics: Mapping[str, Any],
        rollouts: Sequence[Mapping[str, Any]],
    ) -> bool:
        """``r.log`` of one step; a tracker that failed is dropped (no call of it again, not even
        close: it may hang again) before the failure is raised or warned about."""

        def call() -> bool:
            r.log(step, metrics, rollouts)
            return True

        try:
            done = self._call(r.name, call, f"step {step}")
        except TrackerError:
            self._drop(r)
            raise
        if done is None:
            self._drop(r)
        return bool(done)

    def log_tables(
        self, step: int, tables: Mapping[str, tuple[list[str], list[list[Any]]]]
    ) -> None:
        """Named tables (columns, rows) of a result run, to every tracker."""
        if not tables:
            return
        for r in list(self.runs):

            def call(r: TrackerRun = r) -> bool:
                r.log_tables(step, tables)
                return True

            if self._call(r.name, call, "tables") is None:
                self._drop(r)

    def rewind(self, step: int) -> None:
        """On resume from the checkpoint at ``step``: every tracker forgets the steps after it
        that the killed attempt logged (each adapter's ``rewind``), so the re-run's values of
        those steps replace the killed attempt's (timing and throughput differ)."""
        for r in list(self.runs):
            if max(r.held, default=0) <= step:
                continue

            def call(r: TrackerRun = r) -> bool:
                r.rewind(step)
                return True

            if self._call(r.name, call, f"forgetting the steps after {step}") is None:
                self._drop(r)
        if self.runs:
            self._save()

    def backfill(
        self, rows: Mapping[int, Mapping[str, Any]], rollouts: Mapping[int, Sequence[Any]]
    ) -> list[int]:
        """Re-send the steps of ``rows`` (``train_log.jsonl`` up to the checkpoint) that a tracker
        lacks, in step order, with their rollouts; returns the steps sent to any tracker."""
        sent = []
        for step in sorted(rows):
            if any(step not in r.held for r in self.runs):
                self.log(step, rows[step], rollouts.get(step, ()))
                sent.append(step)
        return sent

    def _save(self) -> None:
        states = {r.name: {**r.state, "logged_through": max(r.held, default=0)} for r in self.runs}
        states = {**self.dropped, **states}
        through = min((s["logged_through"] for s in states.values()), default=0)
        write_state(self.run_dir, {"logged_through": through, **states})

    def close(self, status: str = "FINISHED") -> None:
        """End every tracker's run (FINISHED, FAILED or KILLED), each under the deadline; one that
        fails to end is named in a warning (the run's outcome stands)."""
        runs, self.runs = self.runs, []
        for r in runs:
            try:
                bounded(
                    lambda r=r: r.close(status),  # type: ignore[misc]
                    timeout_s=self.s.timeout_s,
                    what=f"{r.name} (ending its run)",
                )
            except TrackerError as err:
                log.warning("%s", err)


def attach_report(run_dirs: Iterable[str | Path], report: str | Path) -> list[str]:
    """Add ``report`` (report.html) as an artifact of the wandb and MLflow runs of every training
    run under ``run_dirs`` (searched recursively for ``tracking.json``); returns ``"tracker:run
    id"`` of each. A tracker that cannot take it is named in a warning; the report itself stands."""
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
