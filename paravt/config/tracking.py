"""The ``logging`` section: the ONE logger list of every trainer (local and verl) and the settings
of the experiment trackers it names (docs/ARCHITECTURE.md, "Experiment tracking")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: The loggers ``logging.loggers`` may list. ``jsonl`` (``train_log.jsonl``) is written whether
#: it is listed or not; the others are optional packages, imported only when listed.
Logger = Literal["console", "jsonl", "tensorboard", "wandb", "mlflow"]

#: Keys that lived in the ``verl`` section before the logger list became one for both trainers.
MOVED_FROM_VERL = {
    "loggers": "logging.loggers",
    "project_name": "logging.project",
    "experiment_name": "logging.run_name",
}


#: The tracking URI schemes MLflow 3 stores to (a database URI may name its driver:
#: ``postgresql+psycopg2://``). Its plain-file store (``file://`` or a bare path) is refused by
#: MLflow 3 itself unless an environment variable opts in, so it is refused here, at load.
MLFLOW_SCHEMES = frozenset(
    {"http", "https", "sqlite", "postgresql", "mysql", "mssql", "databricks"}
)
FILE_STORE_FIX = (
    "MLflow 3 no longer stores to plain files (file:// or a bare path); use a SQLite file, e.g. "
    "sqlite:///ABSOLUTE/PATH/mlflow.db, or leave it unset for a local store under the run"
)


class LoggingConfig(BaseModel):
    """Where each step's metrics go, for ``paravt train prior|sft|rl`` (local or ``--engine verl``),
    ``paravt repro`` and ``paravt demo``."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    loggers: list[Logger] = Field(
        ["console"],
        description="Loggers of every trainer (local and verl's trainer.logger): console (the "
        "progress bar), jsonl (train_log.jsonl, always written), tensorboard "
        "(OUT/tb), wandb, mlflow; wandb, mlflow and tensorboard need `pip "
        "install 'paravt[tracking]'`.",
    )
    project: str = Field(
        "paravt",
        min_length=1,
        description="Tracker project: the wandb project, the MLflow experiment, verl's "
        "trainer.project_name.",
    )
    run_name: str | None = Field(
        None,
        description="Tracker run name (verl's trainer.experiment_name); None: the run "
        "directory's name (`paravt repro`: the stage, e.g. paragrpo/seed0).",
    )
    group: str | None = Field(
        None,
        description="Tracker group of related runs (wandb group, MLflow tag paravt.group); None: "
        "none, except `paravt repro`, which groups its variants and seeds "
        "under its output directory's name.",
    )
    variant: str | None = Field(
        None,
        description="The variant a run belongs to, as a tag of its tracker runs (MLflow "
        "paravt.variant, wandb variant:NAME) beside the automatic kind, seed and commit tags; "
        "`paravt repro` sets it per stage (prior_strong, sft_strong, paragrpo, ...); None: no "
        "variant tag.",
    )
    wandb_mode: Literal["online", "offline"] = Field(
        "online",
        description="wandb.init(mode=...): offline writes OUT/wandb/ only (no network; `wandb "
        "sync` uploads it later).",
    )
    wandb_entity: str | None = Field(
        None, description="wandb entity (team or user); None: the account's default."
    )
    mlflow_tracking_uri: str | None = Field(
        None,
        description="MLflow tracking URI (a server http(s)://..., or a database such as "
        "sqlite:///path.db); None: a local store under the run, OUT/mlruns/ "
        "(mlflow.db with artifacts/ beside it).",
    )

    tracker_timeout_s: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="Deadline in seconds of each tracker call (start, one step's log, finish): a "
        "dead or slow tracking server fails within it instead of MLflow's or wandb's own "
        "minutes of retries.",
    )
    tracker_errors: Literal["fail", "warn"] = Field(
        "fail",
        description="A tracker call that fails or passes tracker_timeout_s: fail (the run stops "
        "with one line, exit 2) or warn (one warning, the run goes on without that tracker; "
        "train_log.jsonl keeps every step).",
    )

    @field_validator("mlflow_tracking_uri")
    @classmethod
    def _known_scheme(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if not v.strip():
            raise ValueError("is empty; leave it unset for a local store under the run")
        scheme = v.split("://", 1)[0].split("+", 1)[0].lower() if "://" in v else ""
        if scheme in ("", "file"):
            raise ValueError(f"{v!r}: {FILE_STORE_FIX}")
        if scheme not in MLFLOW_SCHEMES:
            raise ValueError(
                f"{v!r} has the scheme {scheme!r}, which MLflow does not store to; use one of "
                + ", ".join(f"{x}://" for x in sorted(MLFLOW_SCHEMES))
                + " (or leave it unset: a local store under the run)"
            )
        return v

    @field_validator("loggers")
    @classmethod
    def _once_each(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(v))  # a logger listed twice logs once


def refuse_moved_verl_keys(data: Any) -> Any:
    """A ``verl:`` mapping that still holds a key of ``MOVED_FROM_VERL`` is refused naming its new
    home."""
    if isinstance(data, dict):
        moved = [f"verl.{k} is now {new}" for k, new in MOVED_FROM_VERL.items() if k in data]
        if moved:
            raise ValueError(
                "; ".join(moved) + " (one logger list for the local and the verl trainer)"
            )
    return data
