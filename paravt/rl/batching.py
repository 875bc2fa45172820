"""From token-level trajectories to padded training tensors, and the logprob alignment.

Alignment (the one convention of the whole RL stack):

- A trajectory stores per-token values ALIGNED WITH ITS IDS: ``loss_mask[t]`` says whether
  ``ids[t]`` was sampled by the policy, and ``logprobs[t]`` is the sampling logprob of ``ids[t]``
  given ``ids[:t]``. Position 0 has no prefix and is never trainable (``loss_mask[0] == 0``).
- ``pad_batch`` keeps that alignment in (B, T) tensors, right-padded.
- The model's logits at position j predict token j + 1, so the trainer computes
  ``gather_logprobs(logits, input_ids)`` = log p(ids[:, 1:]) from ``logits[:, :-1]``, a (B, T − 1)
  tensor whose column j belongs to token ``input_ids[:, j + 1]``. ``shift_targets`` drops column
  0 of the (B, T) per-token tensors so that they line up with it:

      logp   = gather_logprobs(logits, batch.input_ids, temperature=τ)   # (B, T-1)
      tgt    = shift_targets(batch)                                      # (B, T-1) each
      policy_loss(logp, tgt.old_logprobs, tgt.advantages, tgt.loss_mask, ...)

- Sampling logprobs come from temperature-scaled logits, so recompute with the same τ
  (``temperature``) or the ratio starts away from 1.

Micro-batches: ``split_micro_batches`` cuts a batch into row slices, each carrying the unmasked
token count of the WHOLE batch (``global_tokens``); passing it to the loss makes the sum of the
micro-batch token-means equal to the full-batch token-mean exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from paravt.errors import ConfigError, DataError


class TokenRecord(Protocol):
    """What ``pad_batch`` reads; ``paravt.agent.Trajectory`` satisfies it."""

    @property
    def ids(self) -> Sequence[int]: ...
    @property
    def loss_mask(self) -> Sequence[int]: ...
    @property
    def logprobs(self) -> Sequence[float]: ...


@dataclass(frozen=True, eq=False)
class PaddedBatch:
    """Right-padded (B, T) tensors, every one aligned with ``input_ids`` (module docstring)."""

    input_ids: torch.Tensor  # (B, T) long, pad_id after each sequence's end
    attention_mask: torch.Tensor  # (B, T) long, 1 on real tokens
    loss_mask: torch.Tensor  # (B, T) float, 1 where input_ids[b, t] was sampled by the policy
    old_logprobs: torch.Tensor  # (B, T) float, sampling logprob of input_ids[b, t]; 0 if masked
    advantages: torch.Tensor  # (B, T) float, the sequence's advantage on loss tokens; 0 elsewhere
    lengths: tuple[int, ...]  # real length of each row

    @property
    def n_loss_tokens(self) -> int:
        return int(self.loss_mask.sum().item())


@dataclass(frozen=True, eq=False)
class LossTargets:
    """Per-token tensors aligned with ``gather_logprobs`` output: column j ↔ input_ids[:, j+1]."""

    loss_mask: torch.Tensor  # (B, T-1)
    old_logprobs: torch.Tensor  # (B, T-1)
    advantages: torch.Tensor  # (B, T-1)


@dataclass(frozen=True, eq=False)
class MicroBatch:
    batch: PaddedBatch
    rows: tuple[int, ...]  # row indices in the full batch
    global_tokens: int  # unmasked tokens in the WHOLE batch: pass to the loss as global_tokens


def _check_record(i: int, rec: TokenRecord) -> None:
    n = len(rec.ids)
    if n == 0 or len(rec.loss_mask) != n or len(rec.logprobs) != n:
        raise DataError(
            f"sequence {i}: ids/loss_mask/logprobs lengths {n}/{len(rec.loss_mask)}/"
            f"{len(rec.logprobs)} must be equal and > 0; build trajectories by appending all three"
        )
    if any(m not in (0, 1) for m in rec.loss_mask):
        raise DataError(f"sequence {i}: loss_mask must hold only 0 and 1")
    if rec.loss_mask[0] == 1:
        raise DataError(
            f"sequence {i}: loss_mask[0] == 1, but the first token has no prefix to be predicted "
            "from; the prompt's tokens must have loss_mask 0"
        )
    bad = [t for t in range(n) if rec.loss_mask[t] and not math.isfinite(rec.logprobs[t])]
    if bad:
        raise DataError(f"sequence {i}: non-finite sampling logprobs at loss positions {bad[:5]}")


def pad_batch(
    seqs: Sequence[TokenRecord],
    advantages: Sequence[float],
    *,
    pad_id: int,
    dtype: torch.dtype = torch.float32,
) -> PaddedBatch:
    """Right-pad ``seqs`` into (B, T) tensors; ``advantages[b]`` is broadcast to row b's loss
    tokens (multi-trajectory credit: pass the episode advantage for each sub-agent row)."""
    if len(seqs) == 0:
        raise DataError("pad_batch got no sequences")
    if len(advantages) != len(seqs):
        raise DataError(f"{len(seqs)} sequences but {len(advantages)} advantages; pass one each")
    for i, rec in enumerate(seqs):
        _check_record(i, rec)
    lengths = tuple(len(rec.ids) for rec in seqs)
    b, t = len(seqs), max(lengths)
    ids = torch.full((b, t), pad_id, dtype=torch.long)  # (B, T)
    attn = torch.zeros((b, t), dtype=torch.long)  # (B, T)
    mask = torch.zeros((b, t), dtype=dtype)  # (B, T)
    old = torch.zeros((b, t), dtype=dtype)  # (B, T)
    for i, rec in enumerate(seqs):
        n = lengths[i]
        ids[i, :n] = torch.tensor(rec.ids, dtype=torch.long)
        attn[i, :n] = 1
        mask[i, :n] = torch.tensor(rec.loss_mask, dtype=dtype)
        old[i, :n] = torch.tensor(rec.logprobs, dtype=dtype) * mask[i, :n]
    adv = torch.tensor(advantages, dtype=dtype)[:, None] * mask  # (B, T)
    return PaddedBatch(ids, attn, mask, old, adv, lengths)


def shift_targets(batch: PaddedBatch) -> LossTargets:
    """Drop column 0 so the per-token tensors align with ``gather_logprobs`` (B, T-1)."""
    return LossTargets(
        loss_mask=batch.loss_mask[:, 1:],  # (B, T-1)
        old_logprobs=batch.old_logprobs[:, 1:],  # (B, T-1)
        advantages=batch.advantages[:, 1:],  # (B, T-1)
    )


def gather_logprobs(
    logits: torch.Tensor, input_ids: torch.Tensor, *, temperature: float = 1.0
) -> torch.Tensor:
    """log softmax(logits[:, j] / τ)[input_ids[:, j + 1]] for j < T − 1; returns (B, T-1)."""
    if temperature <= 0:
        raise ConfigError(f"temperature={temperature} must be > 0 (use the sampling temperature)")
    if logits.dim() != 3 or logits.shape[:2] != input_ids.shape:
        raise DataError(
            f"logits {tuple(logits.shape)} must be (B, T, V) with (B, T) = input_ids "
            f"{tuple(input_ids.shape)}"
        )
    work = logits[:, :-1].to(torch.promote_types(logits.dtype, torch.float32))  # (B, T-1, V)
    logp = torch.log_softmax(work / temperature, dim=-1)  # (B, T-1, V), bf16/fp16 upcast
    return logp.gather(-1, input_ids[:, 1:, None]).squeeze(-1)  # (B, T-1)


def _rows(batch: PaddedBatch, rows: Sequence[int], trim: bool) -> PaddedBatch:
    idx = torch.tensor(rows, dtype=torch.long)
    lengths = tuple(batch.lengths[r] for r in rows)
    t = max(lengths) if trim else batch.input_ids.shape[1]
    return PaddedBatch(
        input_ids=batch.input_ids[idx, :t],  # (b, t)
        attention_mask=batch.attention_mask[idx, :t],  # (b, t)
        loss_mask=batch.loss_mask[idx, :t],  # (b, t)
        old_logprobs=batch.old_logprobs[idx, :t],  # (b, t)
        advantages=batch.advantages[idx, :t],  # (b, t)
        lengths=lengths,
    )


def split_micro_batches(
    batch: PaddedBatch, micro_batch_size: int, *, trim: bool = True
) -> list[MicroBatch]:
    """Consecutive row slices of at most ``micro_batch_size`` rows. With ``trim`` each slice is
    cut to its own longest row (padding columns carry no loss, so the loss is unchanged)."""
    if micro_batch_size < 1:
        raise ConfigError(f"micro_batch_size={micro_batch_size} must be >= 1")
    total = int(batch.loss_mask[:, 1:].sum().item())  # tokens the shifted loss sees
    b = batch.input_ids.shape[0]
    out = []
    for start in range(0, b, micro_batch_size):
        rows = tuple(range(start, min(start + micro_batch_size, b)))
        out.append(MicroBatch(_rows(batch, rows, trim), rows, total))
    return out
