"""The ONE trainer contract the outer loop drives (``paravt.rl.loop``); the registry of kinds is
``TRAINERS`` in ``paravt.rl.registry``.

A trainer owns its hyper-parameters (lr, seed, warm-up, checkpoint period), its data position and
its step; the loop owns resume, progress, logging and checkpoints. A new trainer kind = one class
implementing ``Trainer`` + one line in ``paravt.rl.registry.TRAINERS`` (docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from paravt.config import TrainConfig
    from paravt.rl.session import OptimiserSection, PolicySession


@dataclass(frozen=True)
class TrainerSettings:
    """What the loop needs before a trainer exists (to build the session)."""

    # the trainer's section (``cfg.rl``, ``cfg.sft``, ``cfg.prior``): lr, decay, betas
    optim: OptimiserSection
    seed: int
    save_every: int
    generate: bool  # the session needs a generator and the tools (rollouts)
    reference: bool  # the session needs a frozen reference policy (KL)


class Trainer(Protocol):
    total_steps: int

    @classmethod
    def trainer_settings(cls, cfg: TrainConfig) -> TrainerSettings: ...

    @classmethod
    def check_data(cls, cfg: TrainConfig) -> None:
        """`DataError` naming ``cfg.data`` when it holds no row this trainer can use (the loop
        calls it before a model loads)."""

    @classmethod
    def build(cls, cfg: TrainConfig, session: PolicySession) -> Trainer: ...

    def step(self, step: int) -> dict[str, float]:
        """One optimisation step (0-based); returns its metrics."""

    def state_dict(self) -> dict[str, Any]:
        """JSON-safe state saved in checkpoints (e.g. the data cursor)."""

    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...

    def describe(self, metrics: Mapping[str, float]) -> str:
        """A short progress-bar text."""

    def rollouts(self) -> list[dict[str, Any]]:
        """The sampled rollouts of the step just run (rows of ``rollouts.jsonl``, for the
        trackers' rollout tables); [] for a trainer that samples none."""
