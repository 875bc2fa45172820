"""One optimizer step on a batch of trajectories: the model-facing half of GRPO.

Each trajectory is forwarded on its own (its media differ from its neighbours'); gradients are
accumulated with the loss normalised by the token count of the WHOLE batch, so the result is the
token-mean over the batch whatever the micro-batching (``paravt.rl.loss`` ``global_tokens``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from paravt.agent.trajectory import Trajectory
from paravt.models.chat import VISION_TOKENS
from paravt.models.media import sequence_logprobs
from paravt.rl.loss import KLKind, grpo_loss


@dataclass(frozen=True)
class TrainItem:
    """A trajectory with the advantage it is trained with."""

    traj: Trajectory
    advantage: float


@dataclass(frozen=True)
class UpdateStats:
    loss: float
    policy_loss: float
    kl: float
    clip_frac: float
    grad_norm: float
    n_tokens: int
    logprob_mismatch: float  # mean |recomputed old logprob − sampling logprob| over sampled tokens
    skipped: bool  # NaN/inf guard fired: no parameter changed

    def to_metrics(self) -> dict[str, float]:
        return {"loss": self.loss, "policy_loss": self.policy_loss, "kl": self.kl, "clip_frac": self.clip_frac,
                "grad_norm": self.grad_norm, "tokens/trained": float(self.n_tokens),
                "logprob_mismatch": self.logprob_mismatch, "update_skipped": float(self.skipped)}


def sampled_positions(traj: Trajectory) -> list[int]:
    """Indices t of tokens the policy sampled (loss mask 1); t ≥ 1 always (a prompt precedes)."""
    return [t for t, m in enumerate(traj.loss_mask) if m]


def trajectory_logprobs(model: Any, processor: Any, traj: Trajectory, temperature: float = 1.0) -> torch.Tensor:
    """log p(token t | prefix) at every sampled position (P,), under the SAMPLING distribution:
    logits / temperature (as verl's actor does, so ratios compare like with like) without the
    vision placeholder ids the generator suppresses; differentiable."""
    return sequence_logprobs(model, processor, traj.ids, traj.videos, traj.images, sampled_positions(traj),
                             temperature=temperature, suppress_ids=_vision_ids(processor))


def _vision_ids(processor: Any) -> tuple[int, ...]:
    """Vision placeholder ids (the generator never samples them): the codec's one list."""
    return tuple(processor.tokenizer.convert_tokens_to_ids(t) for t in VISION_TOKENS)


@torch.no_grad()
def frozen_logprobs(model: Any, processor: Any, items: Sequence[TrainItem], temperature: float) -> list[torch.Tensor]:
    return [trajectory_logprobs(model, processor, it.traj, temperature).detach() for it in items]


def ppo_update(
    model: Any, processor: Any, optimizer: torch.optim.Optimizer, items: Sequence[TrainItem], *,
    clip_eps: float, kl_coef: float, kl_kind: KLKind, max_grad_norm: float,
    ref_model: Any | None = None, ppo_epochs: int = 1, temperature: float = 1.0,
) -> UpdateStats:
    """PPO-clip GRPO update over ``items`` (``ppo_epochs`` passes, one optimizer step each)."""
    items = [it for it in items if it.traj.n_sampled > 0]
    if not items:
        return UpdateStats(0.0, 0.0, 0.0, 0.0, 0.0, 0, 0.0, skipped=True)
    total = sum(it.traj.n_sampled for it in items)
    old = frozen_logprobs(model, processor, items, temperature)
    mismatch = _mismatch(items, old)
    ref = frozen_logprobs(ref_model, processor, items, temperature) if (ref_model is not None and kl_coef > 0) else None
    stats = None
    for _ in range(ppo_epochs):
        stats = _one_pass(model, processor, optimizer, items, old, ref, total, clip_eps=clip_eps, kl_coef=kl_coef,
                          kl_kind=kl_kind, max_grad_norm=max_grad_norm, mismatch=mismatch,
                          temperature=temperature)
    assert stats is not None
    return stats


def _one_pass(model: Any, processor: Any, optimizer: torch.optim.Optimizer, items: Sequence[TrainItem],
              old: list[torch.Tensor], ref: list[torch.Tensor] | None, total: int, *, clip_eps: float,
              kl_coef: float, kl_kind: KLKind, max_grad_norm: float, mismatch: float,
              temperature: float) -> UpdateStats:
    optimizer.zero_grad(set_to_none=True)
    loss_sum = pol_sum = kl_sum = clip_sum = 0.0
    for i, it in enumerate(items):
        lp = trajectory_logprobs(model, processor, it.traj, temperature)[None]  # (1, P)
        mask = torch.ones_like(lp)  # (1, P): only sampled positions were gathered
        adv = torch.tensor([it.advantage], dtype=lp.dtype, device=lp.device)  # (1,)
        out = grpo_loss(lp, old[i][None], adv, mask, clip_eps=clip_eps,
                        ref_logprobs=None if ref is None else ref[i][None], kl_coef=kl_coef if ref is not None else 0.0,
                        kl_kind=kl_kind, global_tokens=total)
        out.loss.backward()
        loss_sum += float(out.loss.detach())
        pol_sum += out.policy_loss
        kl_sum += out.kl
        clip_sum += out.clip_frac
    grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm))
    skipped = not (math.isfinite(loss_sum) and math.isfinite(grad_norm))
    if skipped:
        optimizer.zero_grad(set_to_none=True)
    else:
        optimizer.step()
    # policy_loss / kl / clip_frac of each item are already divided by the batch token count
    return UpdateStats(loss_sum, pol_sum, kl_sum, clip_sum, grad_norm, total, mismatch, skipped)


def _mismatch(items: Sequence[TrainItem], old: Sequence[torch.Tensor]) -> float:
    diffs = []
    for it, lp in zip(items, old, strict=True):
        sampled = torch.tensor([it.traj.logprobs[t] for t in sampled_positions(it.traj)], dtype=lp.dtype,
                               device=lp.device)
        diffs.append((lp - sampled).abs())
    return float(torch.cat(diffs).mean()) if diffs else 0.0
