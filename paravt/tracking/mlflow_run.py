"""The MLflow adapter: one MLflow run per training run, its id kept in ``OUT/tracking.json`` so a
resumed run logs into the same one.

The default store is local, under the run: ``OUT/mlruns/mlflow.db`` with ``OUT/mlruns/artifacts/``
(MLflow 3 refuses its plain-file store unless an environment variable opts in, and recommends
SQLite; `mlflow ui --backend-store-uri sqlite:///OUT/mlruns/mlflow.db` shows it). A tracking URI
from ``logging.mlflow_tracking_uri`` replaces it. The client API is used throughout (no active run
in a global): several runs in one process (`paravt repro`) never mix."""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from paravt.errors import ConfigError
from paravt.tracking.settings import TrackingSettings, require
from paravt.tracking.stores import STEP_KEY
from paravt.tracking.table import numeric, rollout_table
from paravt.tracking.tags import mlflow_tags

_BAD_KEY = re.compile(r"[^\w\-. /:]")  # MLflow's allowed key characters
PARAM_MAX = 6000  # MLflow's longest param value
BATCH = 100  # params per log_batch (MLflow's limit)
_CHATTY = ("mlflow.store.db.utils", "alembic.runtime.migration")  # INFO lines on a new store


class MlflowRun:
    name = "mlflow"

    def __init__(
        self,
        run_dir: Path,
        s: TrackingSettings,
        *,
        run_name: str,
        config: Mapping[str, Any] | None,
        prev: Mapping[str, Any] | None,
    ) -> None:
        mlflow = require("mlflow")
        for quiet in _CHATTY:  # a new store's schema set-up is not the user's business
            logging.getLogger(quiet).setLevel(logging.WARNING)
        run_id = str(prev["run_id"]) if prev else None
        local = s.mlflow_tracking_uri is None
        root = (run_dir / "mlruns").resolve()
        if local:
            root.mkdir(parents=True, exist_ok=True)
        uri = f"sqlite:///{root / 'mlflow.db'}" if local else s.mlflow_tracking_uri
        if uri is not None and uri.startswith("sqlite:///"):
            _writable_sqlite(uri)  # one line naming the cause, not MLflow's retries
        self.client = mlflow.MlflowClient(tracking_uri=uri)
        self._entities = mlflow.entities
        try:
            artifacts = (root / "artifacts").as_uri() if local else artifacts_beside(str(uri))
            run_id = self._start(s, run_name, config, run_id, artifacts)
        except Exception as err:  # noqa: BLE001 - MLflow raises its own kinds and requests' ones
            why = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
            raise ConfigError(
                f"MLflow at {uri} cannot start or continue the run ({why}); check "
                "logging.mlflow_tracking_uri (unset: a local store under the run)"
            ) from None
        self.id = run_id
        self.state = {"run_id": run_id, "tracking_uri": uri}
        self.held: set[int] = set()
        self._tables: set[str] = set()
        if prev:  # what the store holds: the steps with their marker, the tables written
            self.held = {m.step for m in self.client.get_metric_history(run_id, STEP_KEY)}
            self._tables = {a.path for a in self.client.list_artifacts(run_id, "rollouts")}

    def _start(
        self,
        s: TrackingSettings,
        run_name: str,
        config: Mapping[str, Any] | None,
        run_id: str | None,
        artifacts: str | None,
    ) -> str:
        """A new run (the config as params) in the experiment ``s.project``, or ``run_id``
        reopened."""
        if run_id is not None:
            self.client.update_run(run_id, status="RUNNING")
            return run_id
        exp = self.client.get_experiment_by_name(s.project)
        exp_id = (
            exp.experiment_id
            if exp is not None
            else self.client.create_experiment(s.project, artifact_location=artifacts)
        )
        tags = {"paravt.group": s.group} if s.group else {}
        tags |= mlflow_tags(s.tags, s.parent_run_id)  # kind, variant, seed, commit; the nesting
        run_id = self.client.create_run(exp_id, run_name=run_name, tags=tags).info.run_id
        for chunk in _chunks(list(_params(config or {})), BATCH):
            self.client.log_batch(run_id, params=[self._entities.Param(k, v) for k, v in chunk])
        return run_id

    def log(
        self, step: int, metrics: Mapping[str, Any], rollouts: Sequence[Mapping[str, Any]]
    ) -> None:
        """The rollouts table, then the metrics with ``STEP_KEY`` in the last batch (one batch is
        one transaction): a step is whole in the store when its marker is there."""
        table = f"rollouts/step_{step:06d}.json"
        if rollouts and table not in self._tables:  # log_table would append to one kept
            columns, rows = rollout_table(rollouts)
            self.client.log_table(
                self.id,
                {c: [r[i] for r in rows] for i, c in enumerate(columns)},
                artifact_file=table,
            )
            self._tables.add(table)
        now = _now_ms()
        ms = [self._entities.Metric(_key(k), v, now, step) for k, v in numeric(metrics).items()]
        ms.append(self._entities.Metric(STEP_KEY, float(step), now, step))
        for chunk in _chunks(ms, 1000):
            self.client.log_batch(self.id, metrics=chunk)

    def log_tables(
        self, step: int, tables: Mapping[str, tuple[list[str], list[list[Any]]]]
    ) -> None:
        for name, (columns, rows) in tables.items():
            self.client.log_table(
                self.id,
                {c: [r[i] for r in rows] for i, c in enumerate(columns)},
                artifact_file=f"{_key(name)}.json",
            )

    def rewind(self, step: int) -> None:
        """Forget the steps after ``step`` (a resumed run re-runs them): in a database store
        (sqlite, postgresql, ...) their values are deleted, so the re-run's replace them (MLflow's
        API only appends; this uses its own store's tables). A tracking server's history only
        grows: there the first attempt's values of those steps stay."""
        from mlflow.store.tracking.dbmodels.models import SqlLatestMetric, SqlMetric
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        store = getattr(getattr(self.client, "_tracking_client", None), "store", None)
        if not isinstance(store, SqlAlchemyStore):
            return
        try:  # MLflow 3 marks a writing session; older ones take no argument
            writing = store.ManagedSessionMaker(read_only=False)
        except TypeError:
            writing = store.ManagedSessionMaker()
        with writing as session:
            mine = SqlMetric.run_uuid == self.id
            session.query(SqlMetric).filter(mine, SqlMetric.step > step).delete()
            session.query(SqlLatestMetric).filter(SqlLatestMetric.run_uuid == self.id).delete()
            latest: dict[str, Any] = {}  # each key's latest as MLflow orders them
            for m in session.query(SqlMetric).filter(mine).all():
                old = latest.get(m.key)
                if old is None or (m.step, m.timestamp, m.value) > (
                    old.step,
                    old.timestamp,
                    old.value,
                ):
                    latest[m.key] = m
            for m in latest.values():
                session.add(
                    SqlLatestMetric(
                        key=m.key,
                        value=m.value,
                        timestamp=m.timestamp,
                        step=m.step,
                        is_nan=m.is_nan,
                        run_uuid=self.id,
                    )
                )
        self.held = {s for s in self.held if s <= step}

    def close(self, status: str = "FINISHED") -> None:
        """FINISHED, FAILED (an exception) or KILLED (SIGTERM, SIGINT)."""
        self.client.set_terminated(self.id, status=status)

    @staticmethod
    def attach(state: Mapping[str, Any], path: Path) -> None:
        mlflow = require("mlflow")
        mlflow.MlflowClient(tracking_uri=state["tracking_uri"]).log_artifact(
            state["run_id"], str(path)
        )


def _writable_sqlite(uri: str) -> None:
    """Make the directory of a ``sqlite:///`` store (SQLite makes the file, not its directory),
    or `ConfigError` naming the path and the cause when the store cannot be written there: a
    read-only directory or file system otherwise costs MLflow's half a minute of retries and ends
    in a message about the tracker's address."""
    db = Path(uri.removeprefix("sqlite:///").split("?", 1)[0])
    fix = "point logging.mlflow_tracking_uri at a writable place (unset: a store under the run)"
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        why = err.strerror or type(err).__name__
        raise ConfigError(f"MLflow store {uri}: cannot make {db.parent} ({why}); {fix}") from None
    # SQLite writes a journal beside the file: the directory must be writable, and the file too
    for path in (db.parent, db) if db.exists() else (db.parent,):
        if not os.access(path, os.W_OK):
            what = "directory" if path.is_dir() else "file"
            raise ConfigError(f"MLflow store {uri}: the {what} {path} is read-only; {fix}")


def artifacts_beside(uri: str) -> str | None:
    """Where a new experiment's artifacts go for a database URI: ``artifacts/`` beside a SQLite
    file (MLflow's default is ./mlruns of the working directory); None (MLflow decides: a server,
    or a file store, which keeps them inside) for the rest."""
    if uri.startswith("sqlite:///"):
        db = Path(uri.removeprefix("sqlite:///").split("?", 1)[0]).resolve()
        return (db.parent / "artifacts").as_uri()
    return None


def _params(config: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """The resolved config flattened to ``section.field`` params."""
    for k, v in config.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            yield from _params(v, key + ".")
        else:
            yield _key(key), str(v)[:PARAM_MAX]


def _key(k: str) -> str:
    return _BAD_KEY.sub("_", k)


def _chunks(xs: list[Any], n: int) -> Iterator[list[Any]]:
    for i in range(0, len(xs), n):
        yield xs[i : i + n]


def _now_ms() -> int:
    return int(time.time() * 1000)
