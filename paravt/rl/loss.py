"""PPO-clip policy loss with a KL penalty to the reference policy (GRPO, docs/ARCHITECTURE.md §5).

All per-token tensors are (B, T) and ALIGNED: position t of ``logprobs``, ``old_logprobs``,
``ref_logprobs``, ``advantages`` and ``mask`` refers to the same predicted token (the trainer
gathers them at the sampled positions, ``paravt.rl.update``). ``mask`` is 1 on tokens the policy
sampled and 0 on prompt, scaffolding, tool-response (observation) and padding tokens: masked
positions contribute neither to the loss nor to its gradient, whatever values they hold.

Aggregation is TOKEN-MEAN: sum over every unmasked token of the batch divided by the number of
such tokens (verl ``loss_agg_mode="token-mean"``, DAPO). Long rollouts therefore weigh more than
short ones; the alternative "seq-mean" (mean per sequence, then over sequences) gives every
rollout equal weight regardless of length and is not implemented. For gradient accumulation pass
``global_tokens`` = the unmasked-token count of the WHOLE batch to every micro-batch: the
micro-batch losses (and every reported metric) then SUM exactly to the full-batch values.

Numerical guards, as in verl: the log ratio is clamped to [−20, 20] before ``exp``, and the k3
estimator to at most 10. Not implemented: dual-clip PPO, entropy bonus (``token_entropy`` is
logged, not trained).

Where the KL acts (``ClipKL.kl_in``, the config's ``rl.kl_in``): "loss" adds
``kl_coef · token_mean(kl_penalty)`` to the loss (``grpo_terms``); "reward" leaves it out of the
loss and the update adds ``kl_returns`` to the per-token advantages instead (the release's AReaL
PPO actor: the KL is a per-token reward, summed into a return-to-go with γ = λ = 1 and no critic,
then the whole per-token advantage is normalised over the batch's tokens, ``token_normalize``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from paravt.config import KLIn, KLKind
from paravt.errors import ConfigError, DataError

_LOG_RATIO_CLAMP = 20.0
_K3_MAX = 10.0
_KL_REWARD_CLAMP = 10.0  # the release clamps every estimate to [−10, 10] before it is a reward
ADV_NORM_EPS = 1e-6  # the batch normalisation's eps (``advantages.batch_normalize`` alike)


@dataclass(frozen=True)
class LossOutput:
    """Policy loss of one (micro-)batch. Metrics are token-means with the loss's denominator."""

    loss: torch.Tensor  # () differentiable
    clip_frac: float  # share of tokens whose clipped term was the active (pessimistic) one
    approx_kl: float  # token-mean of old_logprob − logprob (verl's ppo_kl)
    ratio_mean: float  # token-mean of exp(logprob − old_logprob)
    n_tokens: int  # unmasked tokens in THIS micro-batch


@dataclass(frozen=True)
class GRPOLossOutput:
    """Total GRPO loss = policy loss + kl_coef · token-mean KL, with its parts for logging."""

    loss: torch.Tensor  # () differentiable
    policy_loss: float
    kl: float  # token-mean KL estimate to the reference policy (0.0 without ref_logprobs)
    clip_frac: float
    approx_kl: float
    ratio_mean: float
    n_tokens: int


def _check_same_shape(**tensors: torch.Tensor) -> None:
    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    if len(set(shapes.values())) != 1 or len(next(iter(shapes.values()))) != 2:
        raise DataError(f"loss inputs must all be (B, T) with the same shape, got {shapes}")


def token_mean(
    values: torch.Tensor, mask: torch.Tensor | None, global_tokens: int | None = None
) -> torch.Tensor:
    """sum(values where mask) / denominator; denominator = ``global_tokens`` or mask.sum().

    Masked positions are selected away with ``torch.where`` (not multiplied by 0), so NaN or inf
    there cannot leak into the result or its gradient. An empty mask gives a zero that still
    belongs to the autograd graph. ``mask=None``: every position counts (the trainer's gathered
    tokens), and the token count is the shape's, so no device→host sync is needed.
    """
    if mask is None:
        local = values.numel()
        if global_tokens is not None and int(global_tokens) < local:
            raise DataError(
                f"global_tokens={global_tokens} is smaller than this micro-batch's {local} "
                "tokens; pass the token count of the whole batch"
            )
        return values.sum() / max(local if global_tokens is None else int(global_tokens), 1)
    keep = mask.bool()  # (B, T)
    local = int(keep.sum().item())
    denom = local if global_tokens is None else int(global_tokens)
    if denom < local:
        raise DataError(
            f"global_tokens={global_tokens} is smaller than this micro-batch's {local} unmasked "
            "tokens; pass the unmasked-token count of the whole batch"
        )
    total = torch.where(keep, values, torch.zeros_like(values)).sum()  # ()
    return total / max(denom, 1)


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_eps: float,
    clip_eps_high: float | None = None,
    global_tokens: int | None = None,
) -> LossOutput:
    """PPO-clip: token-mean of max(−A·ρ, −A·clip(ρ, 1 − ε, 1 + ε_high)), ρ = exp(logp − old).

    ``advantages`` may be (B, T) per token or (B,) per sequence (broadcast over T).
    ``clip_eps_high`` defaults to ``clip_eps`` (DAPO's clip-higher uses a larger value).
    """
    t = _policy_terms(
        logprobs,
        old_logprobs,
        advantages,
        mask,
        clip_eps=clip_eps,
        clip_eps_high=clip_eps_high,
        global_tokens=global_tokens,
    )
    return LossOutput(
        loss=t.loss,
        clip_frac=float(t.clip_frac),
        approx_kl=float(t.approx_kl),
        ratio_mean=float(t.ratio_mean),
        n_tokens=int(mask.bool().sum().item()),
    )


@dataclass(frozen=True)
class LossTerms:
    """The loss and its logged parts as tensors (no device→host sync): ``loss`` differentiable,
    the rest detached ()."""

    loss: torch.Tensor
    policy_loss: torch.Tensor
    kl: torch.Tensor
    clip_frac: torch.Tensor
    approx_kl: torch.Tensor
    ratio_mean: torch.Tensor
    # share of tokens clipped at 1 + ε_high (advantage > 0: TRL's clip_ratio/high_mean); the rest
    # of ``clip_frac`` is clipped at 1 − ε (advantage < 0: clip_ratio/low_mean)
    clip_high: torch.Tensor | None = None


def _policy_terms(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor | None,
    *,
    clip_eps: float,
    clip_eps_high: float | None,
    global_tokens: int | None,
) -> LossTerms:
    high = clip_eps if clip_eps_high is None else clip_eps_high
    if not 0.0 < clip_eps < 1.0 or high <= 0.0:
        raise ConfigError(
            f"clip_eps={clip_eps}, clip_eps_high={clip_eps_high}: need 0 < clip_eps < 1 and "
            "clip_eps_high > 0 (paper: clip_eps 0.2)"
        )
    if advantages.dim() == 1:
        advantages = advantages[:, None].expand_as(logprobs)  # (B, T)
    _check_same_shape(
        logprobs=logprobs,
        old_logprobs=old_logprobs,
        advantages=advantages,
        mask=torch.empty_like(logprobs) if mask is None else mask,
    )
    log_ratio = (logprobs - old_logprobs).clamp(-_LOG_RATIO_CLAMP, _LOG_RATIO_CLAMP)  # (B, T)
    ratio = torch.exp(log_ratio)  # (B, T)
    unclipped = -advantages * ratio  # (B, T)
    clipped = -advantages * ratio.clamp(1.0 - clip_eps, 1.0 + high)  # (B, T)
    per_token = torch.maximum(unclipped, clipped)  # (B, T)
    loss = token_mean(per_token, mask, global_tokens)  # ()
    with torch.no_grad():
        active = clipped > unclipped  # (B, T)
        clip_frac = token_mean(active.to(ratio.dtype), mask, global_tokens)
        clip_high = token_mean((active & (advantages > 0)).to(ratio.dtype), mask, global_tokens)
        approx_kl = token_mean(-log_ratio, mask, global_tokens)
        ratio_mean = token_mean(ratio, mask, global_tokens)
    zero = torch.zeros((), dtype=loss.dtype, device=loss.device)
    return LossTerms(loss, loss.detach(), zero, clip_frac, approx_kl, ratio_mean, clip_high)


def kl_penalty(logprobs: torch.Tensor, ref_logprobs: torch.Tensor, kind: KLKind) -> torch.Tensor:
    """Per-token estimate of KL(π_θ ‖ π_ref) from samples of π_θ; returns (B, T).

    k1 = logp − ref (unbiased, can be negative, high variance);
    k3 = exp(ref − logp) − (ref − logp) − 1 (unbiased, always ≥ 0, low variance; Schulman,
    "Approximating KL divergence", 2020; verl's ``low_var_kl``), capped at 10.
    """
    if logprobs.shape != ref_logprobs.shape:
        raise DataError(
            f"logprobs {tuple(logprobs.shape)} and ref_logprobs {tuple(ref_logprobs.shape)} differ"
        )
    if kind == "k1":
        return logprobs - ref_logprobs  # (B, T)
    if kind == "k3":
        d = (ref_logprobs - logprobs).clamp(-_LOG_RATIO_CLAMP, _LOG_RATIO_CLAMP)  # (B, T)
        return (torch.exp(d) - d - 1.0).clamp(max=_K3_MAX)  # (B, T)
    raise ConfigError(f"kl kind {kind!r} is not one of 'k1', 'k3'; fix rl.kl_estimator")


@dataclass(frozen=True)
class ClipKL:
    """The PPO clip range and the KL penalty to the reference (the ``rl`` section's ``clip_eps``,
    ``kl_coef``, ``kl_estimator`` and ``kl_in``; ``clip_eps_high`` None = symmetric). ``kl_in``
    "reward": the loss carries no KL term (``paravt.rl.update`` adds ``kl_returns`` to the
    advantages)."""

    clip_eps: float
    clip_eps_high: float | None = None
    kl_coef: float = 0.0
    kl_kind: KLKind = "k3"
    kl_in: KLIn = "loss"


def kl_returns(
    logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor,
    counts: Sequence[int],
    *,
    kl_coef: float,
    kind: KLKind,
) -> torch.Tensor:
    """The KL as a per-token reward and its return-to-go, over the scored tokens (N,) of rows
    holding ``counts`` tokens each (rows in order, each row's tokens in position order).

    r_t = −kl_coef · clamp(kl_penalty(logprobs, ref_logprobs)_t, −10, 10) and
    G_t = Σ_{t' ≥ t, same row} r_t' (γ = λ = 1 and zero values: AReaL's GAE as the release runs
    it; tokens of other turns count, tool responses are not scored so add nothing). Detached: a
    reward, never differentiated. Returns (N,) float32.
    """
    if sum(counts) != logprobs.numel():
        raise DataError(f"counts sum to {sum(counts)} but there are {logprobs.numel()} tokens")
    k = kl_penalty(logprobs.detach().float(), ref_logprobs.detach().float(), kind)  # (N,)
    r = -kl_coef * k.clamp(-_KL_REWARD_CLAMP, _KL_REWARD_CLAMP)  # (N,)
    rows = r.split(list(counts))
    return torch.cat([row.flip(0).cumsum(0).flip(0) for row in rows]) if rows else r


def shape_advantages(
    adv: Sequence[torch.Tensor],
    policy: Sequence[torch.Tensor | None],
    ref: Sequence[torch.Tensor | None],
    counts: Sequence[Sequence[int]],
    clip: ClipKL,
    *,
    token_norm: bool,
) -> list[torch.Tensor]:
    """The per-token advantages of each chunk (a micro-batch or a row: (N_k,) each, its rows'
    token ``counts``): with ``clip.kl_in`` "reward", ``kl_coef`` > 0 and reference logprobs,
    ``kl_returns`` of ``policy`` (the policy's own logprobs at the update's start, recomputed on
    the chunk's tensors: ``paravt.rl.update``; None where that reward is off) is added; with
    ``token_norm`` the result is normalised over every chunk's tokens together
    (``token_normalize``)."""
    out = list(adv)
    if clip.kl_in == "reward" and clip.kl_coef > 0 and all(r is not None for r in ref):
        out = []
        for a, p, r, n in zip(adv, policy, ref, counts, strict=True):
            if p is None or r is None:
                raise ValueError("the KL reward needs the policy's and the reference's logprobs")
            out.append(a + kl_returns(p, r, n, kl_coef=clip.kl_coef, kind=clip.kl_kind).to(a))
    if token_norm and out:
        flat = token_normalize(torch.cat(out))
        out = [x.to(a) for x, a in zip(flat.split([len(a) for a in out]), out, strict=True)]
    return out


def token_normalize(advantages: torch.Tensor, eps: float = ADV_NORM_EPS) -> torch.Tensor:
    """(A − mean) / (std + eps) over every element (every trained token of the batch; the sample
    std, divisor N − 1, computed in float64): the release's ``adv_norm`` batch mean / std under
    the loss mask. Fewer than two tokens, or all equal: zeros. Returns float32, same shape."""
    a = advantages.detach().double()
    if a.numel() < 2:
        return torch.zeros_like(advantages, dtype=torch.float32)
    return ((a - a.mean()) / (a.std(unbiased=True) + eps)).float()


def grpo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip: ClipKL,
    ref_logprobs: torch.Tensor | None = None,
    global_tokens: int | None = None,
) -> GRPOLossOutput:
    """policy_loss + kl_coef · token_mean(kl_penalty(logprobs, ref_logprobs, kl_kind)).

    Both terms use the same mask and denominator, so accumulation over micro-batches with
    ``global_tokens`` stays exact. ``ref_logprobs`` is required when ``kl_coef > 0``.
    """
    t = grpo_terms(
        logprobs,
        old_logprobs,
        advantages,
        mask,
        clip=clip,
        ref_logprobs=ref_logprobs,
        global_tokens=global_tokens,
    )
    return GRPOLossOutput(
        loss=t.loss,
        policy_loss=float(t.policy_loss),
        kl=float(t.kl),
        clip_frac=float(t.clip_frac),
        approx_kl=float(t.approx_kl),
        ratio_mean=float(t.ratio_mean),
        n_tokens=int(mask.bool().sum().item()),
    )


def grpo_terms(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor | None,
    *,
    clip: ClipKL,
    ref_logprobs: torch.Tensor | None = None,
    global_tokens: int | None = None,
) -> LossTerms:
    """``grpo_loss`` as tensors, without a device→host sync when ``mask`` is None (every position
    is a scored token: the trainer's gathered tokens); the same values bit for bit."""
    clip_eps, clip_eps_high, kl_coef, kl_kind = (
        clip.clip_eps,
        clip.clip_eps_high,
        clip.kl_coef,
        clip.kl_kind,
    )
    if kl_coef < 0:
        raise ConfigError(f"kl_coef={kl_coef} must be >= 0 (paper: 0.01)")
    if kl_coef > 0 and ref_logprobs is None:
        raise ConfigError(
            f"kl_coef={kl_coef} needs ref_logprobs; pass the reference policy's logprobs or set "
            "rl.kl_coef=0"
        )
    pol = _policy_terms(
        logprobs,
        old_logprobs,
        advantages,
        mask,
        clip_eps=clip_eps,
        clip_eps_high=clip_eps_high,
        global_tokens=global_tokens,
    )
    if ref_logprobs is None:
        return pol
    kl = token_mean(kl_penalty(logprobs, ref_logprobs, kl_kind), mask, global_tokens)  # ()
    return LossTerms(
        pol.loss + kl_coef * kl,
        pol.policy_loss,
        kl.detach(),
        pol.clip_frac,
        pol.approx_kl,
        pol.ratio_mean,
        pol.clip_high,
    )


def token_entropy(logp: torch.Tensor) -> torch.Tensor:
    """Entropy −Σ_v p_v · log p_v of each row of a log-probability matrix (N, V) → (N,).

    Suppressed entries (log p = −inf, p = 0) contribute 0, not NaN (0 · −inf)."""
    p = torch.exp(logp)  # (N, V)
    return -torch.where(p > 0, p * logp, torch.zeros_like(p)).sum(-1)  # (N,)
