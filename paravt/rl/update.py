"""One optimizer step on a batch of trajectories: the model-facing half of GRPO.

The batched path (default) forwards right-padded micro-batches of trajectories WITH their media
(``paravt.rl.batch``), bounded by ``micro_batch_tokens`` padded tokens. Per micro-batch the
reference model scores the SAME input tensors under ``no_grad`` right before the policy forward.
Gradients are accumulated with the loss normalised by the token count of the WHOLE batch, so the
result is the token-mean over the batch whatever the micro-batching (``paravt.rl.loss``
``global_tokens``).

Old logprobs: there is no separate pass. The policy that sampled is the policy at the start of the
update (the trainer changes weights only here), so the "old" logprobs are the detached logprobs of
the first epoch's own forward: equal to a recompute by construction (same model, weights and
tensors; ratio exactly 1 in epoch 1), kept for epochs 2.. when ``ppo_epochs > 1``. The generator's
sampling logprobs are NOT used as old logprobs (a remote server or another dtype/kernel may differ
slightly); they only feed ``logprob_mismatch``. Models with active dropout would need the separate
pass; the tiny and Qwen-VL configs have none.

Per-token advantages (``loss.shape_advantages``: + the KL return-to-go with ``clip.kl_in`` reward,
normalised over all scored tokens with ``passes.token_norm``) need every micro-batch's reference
logprobs before the first loss: the reference scores the micro-batches first, then the policy runs.
The KL reward reads the POLICY'S OWN logprobs, a no-grad forward of every micro-batch before the
first loss (``_kl_policy``), never the generator's: their last bits follow which rows shared its
forwards (timing), and token normalisation made those bits whole advantages when a step's groups
tied (docs/reliability.md). The recompute depends on tokens and weights alone (at the first
step, where the policy IS the reference, the KL reward is exactly 0).

``batched=False`` is today's per-sequence path (old, reference and loss passes, one sequence at a
time): the equivalence oracle of tests/rl/test_batched_passes.py and the baseline of the speed
benchmarks; the same loss formula (``paravt.rl.loss.grpo_loss``) serves both.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from paravt.agent.trajectory import Trajectory
from paravt.models.media import sequence_logprobs
from paravt.rl.batch import (
    DEFAULT_MICRO_BATCH_TOKENS,
    MicroBatch,
    micro_batches,
    sampled_positions,
    sampling_logprobs,
    score,
    vision_ids,
)
from paravt.rl.loss import ClipKL, LossTerms, grpo_terms, shape_advantages
from paravt.rl.optim_step import LossSums, StepResult, optimizer_step

__all__ = [
    "TrainItem",
    "UpdateStats",
    "ppo_update",
    "trajectory_logprobs",
    "sampled_positions",
]


@dataclass(frozen=True)
class TrainItem:
    """A trajectory with the advantage it is trained with."""

    traj: Trajectory
    advantage: float


@dataclass(frozen=True)
class UpdateStats:
    loss: float
    policy_loss: float
    # token-mean KL estimate (rl.kl_estimator) to the reference (init) policy; 0.0 without one
    kl: float
    clip_frac: (
        float  # share of tokens whose clipped term was active (last epoch; 0 when ppo_epochs == 1)
    )
    grad_norm: float
    n_tokens: int
    logprob_mismatch: float  # mean |old logprob − sampling logprob| over sampled tokens
    skipped: bool  # NaN/inf guard fired: no parameter changed
    entropy: float = (
        math.nan
    )  # token-mean entropy of the sampling distribution at the sampled tokens
    # (policy before the update); NaN on the per-sequence path, which does not compute it
    # token-mean of old − new logprob over the update's passes (verl's actor/ppo_kl); 0 with one
    # PPO epoch, whose single pass IS the old policy
    ppo_kl: float = 0.0
    clip_high: float = 0.0  # the part of clip_frac clipped at 1 + ε_high (advantage > 0)
    # wall seconds of the KL reward's no-grad policy pass (the trainer's timing_s/old_log_prob;
    # 0 without that reward or on the per-sequence path, whose old pass always runs)
    old_logprob_s: float = 0.0

    def to_metrics(self) -> dict[str, float]:
        """verl's names where verl has one, TRL's where only TRL has (docs/tracking.md)."""
        return {
            "actor/loss": self.loss,
            "actor/pg_loss": self.policy_loss,
            "actor/kl_loss": self.kl,
            "actor/ppo_kl": self.ppo_kl,
            "actor/pg_clipfrac": self.clip_frac,
            "clip_ratio/low_mean": self.clip_frac - self.clip_high,
            "clip_ratio/high_mean": self.clip_high,
            "actor/entropy": self.entropy,
            "actor/grad_norm": self.grad_norm,
            "tokens/trained": float(self.n_tokens),
            "logprob_mismatch": self.logprob_mismatch,
            "update_skipped": float(self.skipped),
        }


def _stats(
    parts: tuple[float, float, float, float, float, float],
    step: StepResult,
    total: int,
    mismatch: float,
    entropy: float = math.nan,
) -> UpdateStats:
    """One epoch's `UpdateStats` from `LossSums.read` and its optimizer step."""
    loss, policy, kl, clip, ppo_kl, high = parts
    return UpdateStats(
        loss, policy, kl, clip, step.grad_norm, total, mismatch, step.skipped, entropy, ppo_kl, high
    )


def trajectory_logprobs(
    model: Any, processor: Any, traj: Trajectory, temperature: float = 1.0
) -> torch.Tensor:
    """log p(token t | prefix) at every sampled position (P,) of ONE trajectory, under the SAMPLING
    distribution: logits / temperature (as verl's actor does, so ratios compare like with like)
    without the vision placeholder ids the generator suppresses; differentiable."""
    return sequence_logprobs(
        model,
        processor,
        traj.ids,
        traj.videos,
        traj.images,
        sampled_positions(traj),
        temperature=temperature,
        suppress_ids=vision_ids(processor),
    )


@dataclass(frozen=True)
class UpdatePasses:
    """How an update passes over its rows: the PPO epochs (one optimizer step each), the
    gradient-norm clip, the padded tokens of a micro-batch (the ``rl`` section's ``ppo_epochs``,
    ``max_grad_norm``, ``micro_batch_tokens``) and whether the per-token advantages are
    normalised over every scored token (``rl.adv_norm`` batch, ``rl.adv_norm_unit`` token)."""

    max_grad_norm: float
    ppo_epochs: int = 1
    micro_batch_tokens: int = DEFAULT_MICRO_BATCH_TOKENS
    token_norm: bool = False


def ppo_update(
    model: Any,
    processor: Any,
    optimizer: torch.optim.Optimizer,
    items: Sequence[TrainItem],
    *,
    clip: ClipKL,
    passes: UpdatePasses,
    ref_model: Any | None = None,
    temperature: float = 1.0,
    batched: bool = True,
) -> UpdateStats:
    """PPO-clip GRPO update over ``items`` (``passes.ppo_epochs`` passes, one optimizer step
    each). With ``ref_model`` the KL to it is computed (and logged) and acts × ``clip.kl_coef``
    where ``clip.kl_in`` says (the loss, or the per-token advantages; the module docstring)."""
    items = [it for it in items if it.traj.n_sampled > 0]
    if not items:
        return UpdateStats(0.0, 0.0, 0.0, 0.0, 0.0, 0, 0.0, skipped=True)
    run = _batched_update if batched else _per_sequence_update
    return run(
        model,
        processor,
        optimizer,
        items,
        _LossArgs(clip, temperature, passes.token_norm),
        ref_model=ref_model,
        ppo_epochs=passes.ppo_epochs,
        max_grad_norm=passes.max_grad_norm,
        micro_batch_tokens=passes.micro_batch_tokens,
    )


@dataclass(frozen=True)
class _LossArgs:
    clip: ClipKL
    temperature: float
    token_norm: bool = False

    def kl_reward(self, ref_model: Any | None) -> bool:
        """Whether the KL acts as a per-token reward (``shape_advantages`` adds its returns)."""
        return ref_model is not None and self.clip.kl_in == "reward" and self.clip.kl_coef > 0

    def loss(
        self,
        lp: torch.Tensor,
        old: torch.Tensor,
        adv: torch.Tensor,
        ref: torch.Tensor | None,
        total: int,
    ) -> LossTerms:
        """grpo_terms of one row or micro-batch, its scored tokens flattened into (1, N); ``adv``
        is (1, N) per token or (1,) per row; no mask: only scored tokens were gathered."""
        in_loss = ref is not None and self.clip.kl_in == "loss"
        return grpo_terms(
            lp,
            old,
            adv.to(lp.dtype),
            None,
            clip=self.clip if in_loss else replace(self.clip, kl_coef=0.0),
            ref_logprobs=ref,
            global_tokens=total,
        )


def _batched_update(
    model: Any,
    processor: Any,
    optimizer: torch.optim.Optimizer,
    items: Sequence[TrainItem],
    args: _LossArgs,
    *,
    ref_model: Any | None,
    ppo_epochs: int,
    max_grad_norm: float,
    micro_batch_tokens: int,
) -> UpdateStats:
    trajs = [it.traj for it in items]
    total = sum(t.n_sampled for t in trajs)
    device = next(model.parameters()).device
    mbs = micro_batches(
        processor, trajs, micro_batch_tokens, device, model=model
    )  # positions once per row
    suppress = vision_ids(processor)
    ref = [_frozen_score(ref_model, mb, args.temperature, suppress) for mb in mbs]  # (N,) each
    start, old_s = _kl_policy(model if args.kl_reward(ref_model) else None, mbs, args, suppress)
    adv = shape_advantages(
        [_token_advantages(items, mb, device) for mb in mbs],
        start,
        ref,
        [mb.counts for mb in mbs],
        args.clip,
        token_norm=args.token_norm,
    )  # (N,) each
    old: list[torch.Tensor] = []
    entropy = torch.zeros((), dtype=torch.float64, device=device)  # summed on the device
    stats = None
    for epoch in range(ppo_epochs):
        optimizer.zero_grad(set_to_none=True)
        sums = LossSums()
        for k, mb in enumerate(mbs):
            s = score(
                model, mb, temperature=args.temperature, suppress_ids=suppress, entropy=epoch == 0
            )
            if epoch == 0:
                assert s.entropy is not None
                old.append(s.logprobs.detach())  # the sampling policy's logprobs (module docstring)
                entropy = entropy + s.entropy.sum().double()
            r = ref[k]
            out = args.loss(
                s.logprobs[None], old[k][None], adv[k][None], None if r is None else r[None], total
            )
            out.loss.backward()
            sums.add(out)
        if epoch == 0:  # the old logprobs are final: one read for the mismatch and the entropy
            mismatch, ent = _mismatch_and_entropy(trajs, mbs, old, entropy)
        parts = sums.read()
        step = optimizer_step(model, optimizer, max_grad_norm, parts[0])
        stats = _stats(parts, step, total, mismatch, ent / total)
    assert stats is not None
    return replace(stats, old_logprob_s=old_s)


@torch.no_grad()
def _frozen_score(
    model: Any | None, mb: MicroBatch, temperature: float, suppress: Sequence[int]
) -> torch.Tensor | None:
    return (
        None
        if model is None
        else score(model, mb, temperature=temperature, suppress_ids=suppress).logprobs
    )


def _kl_policy(
    model: Any | None, mbs: Sequence[MicroBatch], args: _LossArgs, suppress: Sequence[int]
) -> tuple[list[torch.Tensor | None], float]:
    """The KL reward's policy logprobs (the module docstring), a no-grad forward of each
    micro-batch before any loss, and its wall seconds; Nones without a ``model`` (reward off)."""
    t0 = time.perf_counter()
    out = [_frozen_score(model, mb, args.temperature, suppress) for mb in mbs]
    return out, time.perf_counter() - t0


def _token_advantages(
    items: Sequence[TrainItem], mb: MicroBatch, device: torch.device
) -> torch.Tensor:
    """Each scored token of the micro-batch takes its trajectory's advantage: (N,)."""
    vals = [items[r].advantage for r, n in zip(mb.rows, mb.counts, strict=True) for _ in range(n)]
    return torch.tensor(vals, dtype=torch.float32, device=device)


def _mismatch_and_entropy(
    trajs: Sequence[Trajectory],
    mbs: Sequence[MicroBatch],
    old: Sequence[torch.Tensor],
    entropy: torch.Tensor,
) -> tuple[float, float]:
    """(mean |old − sampling logprob|, summed entropy), read back in one sync."""
    diffs = [
        (lp - sampling_logprobs(trajs, mb, lp.dtype, lp.device)).abs()
        for mb, lp in zip(mbs, old, strict=True)
    ]
    mismatch, ent = torch.stack([torch.cat(diffs).mean().double(), entropy]).tolist()
    return mismatch, ent


def _per_sequence_update(
    model: Any,
    processor: Any,
    optimizer: torch.optim.Optimizer,
    items: Sequence[TrainItem],
    args: _LossArgs,
    *,
    ref_model: Any | None,
    ppo_epochs: int,
    max_grad_norm: float,
    micro_batch_tokens: int,
) -> UpdateStats:
    """Today's path kept as the oracle and the benchmark baseline: an old-logprob pass, a reference
    pass and the loss pass, each forwarding one trajectory at a time."""
    del micro_batch_tokens  # one sequence per forward
    total = sum(it.traj.n_sampled for it in items)
    with torch.no_grad():
        old = [trajectory_logprobs(model, processor, it.traj, args.temperature) for it in items]
        ref = [
            None
            if ref_model is None
            else trajectory_logprobs(ref_model, processor, it.traj, args.temperature)
            for it in items
        ]
    sampled = [
        torch.tensor([it.traj.logprobs[t] for t in sampled_positions(it.traj)]) for it in items
    ]
    adv = shape_advantages(
        [torch.full((len(s),), float(it.advantage)) for it, s in zip(items, sampled, strict=True)],
        old,  # the KL reward's policy logprobs (the module docstring)
        ref,
        [(len(s),) for s in sampled],
        args.clip,
        token_norm=args.token_norm,
    )  # (P,) each
    mismatch = float(
        torch.cat([(lp - s.to(lp)).abs() for lp, s in zip(old, sampled, strict=True)]).mean()
    )
    stats = None
    for _ in range(ppo_epochs):
        optimizer.zero_grad(set_to_none=True)
        sums = LossSums()
        for i, it in enumerate(items):
            lp = trajectory_logprobs(model, processor, it.traj, args.temperature)  # (P,)
            r = ref[i]
            out = args.loss(
                lp[None],
                old[i][None],
                adv[i][None],
                None if r is None else r[None],
                total,
            )
            out.loss.backward()
            sums.add(out)
        parts = sums.read()
        step = optimizer_step(model, optimizer, max_grad_norm, parts[0])
        stats = _stats(parts, step, total, mismatch)
    assert stats is not None
    return stats
