"""The trackers' settings as plain values, built from the ``logging`` section at the edge (the
trackers never see the config tree), and the ONE import check of an optional tracker package."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import ModuleType
from typing import TYPE_CHECKING

from paravt.errors import ConfigError

if TYPE_CHECKING:
    from paravt.config.tracking import LoggingConfig

#: logger -> the module it imports; each comes with `pip install 'paravt[tracking]'`.
PACKAGES = {"tensorboard": "torch.utils.tensorboard", "wandb": "wandb", "mlflow": "mlflow"}
EXTRA = "tracking"


@dataclass(frozen=True)
class TrackingSettings:
    loggers: tuple[str, ...]
    project: str = "paravt"
    run_name: str | None = None  # None: the run directory's name
    group: str | None = None
    wandb_mode: str = "online"
    wandb_entity: str | None = None
    mlflow_tracking_uri: str | None = None  # None: OUT/mlruns/mlflow.db
    timeout_s: float = 30.0  # each tracker call's deadline (logging.tracker_timeout_s)
    errors: str = "fail"  # "fail" or "warn" (logging.tracker_errors)
    tags: tuple[tuple[str, str], ...] = ()  # kind, variant, seed, commit (`paravt.tracking.tags`)
    parent_run_id: str | None = None  # MLflow: the run this one nests under (an eval's training)
    variant: str | None = None  # logging.variant, for `tagged`

    @classmethod
    def from_config(cls, c: LoggingConfig) -> TrackingSettings:
        return cls(
            tuple(c.loggers),
            c.project,
            c.run_name,
            c.group,
            c.wandb_mode,
            c.wandb_entity,
            c.mlflow_tracking_uri,
            c.tracker_timeout_s,
            c.tracker_errors,
            variant=c.variant,
        )

    def tagged(
        self, kind: str, *, seed: int | None = None, parent_run_id: str | None = None
    ) -> TrackingSettings:
        """These settings for a run of ``kind`` (`paravt.tracking.tags.KINDS`) and ``seed``, in the
        variant ``logging.variant``, nested (MLflow) under ``parent_run_id``."""
        from paravt.tracking.tags import run_tags

        return replace(
            self,
            tags=run_tags(kind, variant=self.variant, seed=seed),
            parent_run_id=parent_run_id,
        )

    @property
    def trackers(self) -> tuple[str, ...]:
        """The listed loggers that are optional packages (``PACKAGES``), in list order."""
        return tuple(x for x in self.loggers if x in PACKAGES)


def require(logger: str) -> ModuleType:
    """The package of ``logger`` (imported now, never before it is listed), else `ConfigError`:
    one line naming the logger, the import that failed and the extra to install."""
    module = PACKAGES[logger]
    try:
        return importlib.import_module(module)
    except ImportError as err:
        why = (str(err).splitlines() or [type(err).__name__])[0]
        raise ConfigError(
            f"logging.loggers lists {logger!r} but `import {module}` fails ({why}); install it "
            "with "
            f"pip install 'paravt[{EXTRA}]', or remove {logger} from logging.loggers"
        ) from None


def require_all(loggers: Sequence[str]) -> None:
    """Import every listed tracker package: a missing one fails before a model loads."""
    for name in loggers:
        if name in PACKAGES:
            require(name)
