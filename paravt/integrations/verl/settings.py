"""The ``verl:`` section of a training YAML: ``paravt.config.VerlConfig`` (one config system).

``VerlSettings`` is kept as the name this package uses for it.
"""

from __future__ import annotations

from paravt.config import TrainConfig, VerlConfig

VerlSettings = VerlConfig


def verl_settings_of(cfg: TrainConfig) -> VerlConfig:
    """The ``verl`` section of ``cfg``."""
    return cfg.verl
