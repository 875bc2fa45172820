"""The registry of trainer kinds (``paravt train prior|sft|rl``): name -> a class implementing the
contract ``paravt.rl.trainer.Trainer``."""

from __future__ import annotations

from typing import Literal

from paravt.rl.grpo import GRPOTrainer
from paravt.rl.prior import PriorTrainer
from paravt.rl.sft import SFTTrainer
from paravt.rl.trainer import Trainer

Kind = Literal["prior", "sft", "rl"]

TRAINERS: dict[str, type[Trainer]] = {"prior": PriorTrainer, "sft": SFTTrainer, "rl": GRPOTrainer}
