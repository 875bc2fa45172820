"""Timing of the training passes, per-sequence vs batched, on the same batch with the same loss.

``compare_passes`` times an SFT step's forward + backward (``paravt.rl.sft.sft_backward``) and a
whole GRPO update (``paravt.rl.update.ppo_update``: old / reference / loss passes per sequence vs
one shared batched pass, clip and optimizer step included; zero-lr SGD so that every repeat sees
the same weights) with ``batched`` False and True, alternating the two paths so that a change of
machine load hits both, and reports medians. The losses of the two paths are returned too: a
speed-up is only claimed for the same loss (``loss_gap`` within float tolerance).

Used by benchmarks/train_step.py (``--passes``) and benchmarks/limits.py.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from paravt.agent.trajectory import Trajectory
from paravt.rl.batch import DEFAULT_MICRO_BATCH_TOKENS
from paravt.rl.loss import ClipKL
from paravt.rl.sft import sft_backward
from paravt.rl.update import TrainItem, UpdatePasses, ppo_update


@dataclass(frozen=True)
class PassTiming:
    per_sequence_s: float  # median seconds of the per-sequence path
    batched_s: float  # median seconds of the batched path
    per_sequence_loss: float
    batched_loss: float
    repeats: int

    @property
    def speedup(self) -> float:
        return self.per_sequence_s / self.batched_s

    @property
    def loss_gap(self) -> float:
        return abs(self.per_sequence_loss - self.batched_loss)


@dataclass(frozen=True)
class PassComparison:
    sft: PassTiming
    update: PassTiming
    sft_rows: int
    update_rows: int
    tokens_per_row: float  # mean sequence length of the SFT batch

    def to_json(self) -> dict[str, float]:
        out: dict[str, float] = {
            "sft_step_speedup": self.sft.speedup,
            "update_speedup": self.update.speedup,
            "sft_rows": self.sft_rows,
            "update_rows": self.update_rows,
            "tokens_per_row": self.tokens_per_row,
        }
        for name, t in (("sft", self.sft), ("update", self.update)):
            out |= {
                f"{name}_per_sequence_s": t.per_sequence_s,
                f"{name}_batched_s": t.batched_s,
                f"{name}_loss_gap": t.loss_gap,
                f"{name}_repeats": t.repeats,
            }
        return out


def _median_pair(run: Callable[[bool], float], repeats: int) -> PassTiming:
    run(True), run(False)  # warm-up: feature cache, allocator, lazy inits
    times: dict[bool, list[float]] = {True: [], False: []}
    loss: dict[bool, float] = {}
    for _ in range(repeats):
        for batched in (False, True):
            t0 = time.perf_counter()
            loss[batched] = run(batched)
            times[batched].append(time.perf_counter() - t0)
    return PassTiming(
        statistics.median(times[False]),
        statistics.median(times[True]),
        loss[False],
        loss[True],
        repeats,
    )


def time_sft(
    model: Any,
    processor: Any,
    rows: Sequence[Trajectory],
    *,
    repeats: int = 5,
    micro_batch_tokens: int = DEFAULT_MICRO_BATCH_TOKENS,
) -> PassTiming:
    """Median forward + backward of one SFT step on ``rows``, per-sequence vs batched."""

    def run(batched: bool) -> float:
        model.zero_grad(set_to_none=True)
        return sft_backward(
            model, processor, rows, batched=batched, micro_batch_tokens=micro_batch_tokens
        ).loss

    return _median_pair(run, repeats)


def time_update(
    model: Any,
    processor: Any,
    items: Sequence[TrainItem],
    *,
    ref_model: Any | None,
    kl_coef: float = 0.01,
    repeats: int = 5,
    temperature: float = 1.0,
    micro_batch_tokens: int = DEFAULT_MICRO_BATCH_TOKENS,
) -> PassTiming:
    """Median GRPO update (``ppo_epochs`` 1, zero-lr SGD) on ``items``, per-sequence vs batched."""
    opt = torch.optim.SGD(model.parameters(), lr=0.0)

    def run(batched: bool) -> float:
        return ppo_update(
            model,
            processor,
            opt,
            items,
            clip=ClipKL(clip_eps=0.2, kl_coef=kl_coef, kl_kind="k3"),
            passes=UpdatePasses(max_grad_norm=1.0, micro_batch_tokens=micro_batch_tokens),
            ref_model=ref_model,
            temperature=temperature,
            batched=batched,
        ).loss

    return _median_pair(run, repeats)


def compare_passes(
    model: Any,
    processor: Any,
    sft_rows: Sequence[Trajectory],
    items: Sequence[TrainItem],
    *,
    ref_model: Any | None,
    repeats: int = 5,
    micro_batch_tokens: int = DEFAULT_MICRO_BATCH_TOKENS,
) -> PassComparison:
    """Both timings; ``to_json()`` carries ``sft_step_speedup`` and ``update_speedup``."""
    sft = time_sft(
        model, processor, sft_rows, repeats=repeats, micro_batch_tokens=micro_batch_tokens
    )
    upd = time_update(
        model,
        processor,
        items,
        ref_model=ref_model,
        repeats=repeats,
        micro_batch_tokens=micro_batch_tokens,
    )
    return PassComparison(
        sft,
        upd,
        len(sft_rows),
        len(items),
        statistics.fmean(len(t.ids) for t in sft_rows) if sft_rows else 0.0,
    )


def items_from_rows(rows: Sequence[Trajectory], seed: int = 0) -> list[TrainItem]:
    """GRPO items from SFT sequences (multi-turn, with media and mask-1 model tokens, as rollouts
    are), with seeded advantages of both signs: an update batch of the real shapes."""
    g = torch.Generator().manual_seed(seed)
    adv = torch.randn(len(rows), generator=g).tolist()
    return [TrainItem(t, a) for t, a in zip(rows, adv, strict=True)]
