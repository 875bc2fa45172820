"""The end of a gradient-accumulation step, shared by the GRPO update (``paravt.rl.update``) and
SFT (``paravt.rl.sft``): the running sums of the micro-batches' loss parts, read back once, and
the optimizer step with its gradient-norm clip and NaN/inf guard."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from paravt.rl.loss import LossTerms


@dataclass(frozen=True)
class StepResult:
    grad_norm: float
    skipped: bool  # the loss or the gradient norm was not finite: gradients dropped, no step


def optimizer_step(
    model: Any, optimizer: torch.optim.Optimizer, max_grad_norm: float, loss: float
) -> StepResult:
    """Clip the accumulated gradients and step, unless ``loss`` or the gradient norm is not finite
    (then the gradients are dropped and no parameter or optimizer state changes)."""
    grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm))
    skipped = not (math.isfinite(loss) and math.isfinite(grad_norm))
    if skipped:
        optimizer.zero_grad(set_to_none=True)
    else:
        optimizer.step()
    return StepResult(grad_norm, skipped)


class LossSums:
    """Running sums of the micro-batch loss parts (each already divided by the batch token
    count), kept on the device in float64 (the sums of the same float32 values that Python floats
    would make) and read back once, by ``read``: no device→host sync per micro-batch."""

    def __init__(self) -> None:
        self.parts: torch.Tensor | None = None  # (6,) loss, policy, kl, clip, ppo_kl, high

    def add(self, out: LossTerms) -> None:
        high = torch.zeros_like(out.clip_frac) if out.clip_high is None else out.clip_high
        terms = torch.stack(
            [out.loss.detach(), out.policy_loss, out.kl, out.clip_frac, out.approx_kl, high]
        )
        self.parts = terms.double() if self.parts is None else self.parts + terms.double()

    def read(self) -> tuple[float, float, float, float, float, float]:
        """(loss, policy, kl, clip, ppo_kl, clip_high): one sync."""
        if self.parts is None:
            return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        loss, policy, kl, clip, ppo_kl, high = self.parts.tolist()
        return loss, policy, kl, clip, ppo_kl, high


__all__ = ["LossSums", "StepResult", "optimizer_step"]
