"""The field's step statistics, named as verl names them (docs/tracking.md has the table with the
verl and TRL equivalents), computed from what a step already has: its episodes, their rewards and
advantages, its phase times (PARA-GRPO) and the step's time and token count (the loop, both
trainers).

- ``response_length/{mean,max,min,clip_ratio}``: sampled tokens of each main trajectory; the clip
  ratio is the share of episodes that stopped on ``max_new_tokens`` (end reason ``length``);
  TRL's ``completions/{mean,max,min}_terminated_length``: the same over the episodes that did not
- ``prompt_length/{mean,max,min}``: the tokens of each main trajectory before its first sampled one
- ``critic/score/{mean,std,max,min}`` and ``critic/rewards/{mean,max,min}``: every rollout's reward
  (equal here: with ``rl.kl_in: reward`` the KL penalty acts per token inside the update and is
  reported as ``actor/kl_loss``, not subtracted from these); ``critic/advantages/*``:
  the kept rollouts' advantages; ``critic/frac_reward_zero_std``: the share of groups whose rewards
  are all equal (no learning signal; TRL's ``frac_reward_zero_std``)
- ``timing_s/{gen,reward,adv,ref,update_actor,tools}``: the step's phases (tools: the summed
  latency of the tool and sub-agent calls, which overlap across concurrent episodes)
- ``perf/{throughput,samples_per_s,total_num_tokens,cumulative_tokens,time_per_step,max_rss_gb,
  max_memory_allocated_gb,max_memory_reserved_gb}`` (`perf_metrics`, added by the loop)
"""

from __future__ import annotations

import math
import resource
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from paravt.agent import EpisodeResult


def spread(prefix: str, values: Sequence[float]) -> dict[str, float]:
    """``prefix/{mean,std,max,min}`` of ``values`` (the population std); none for no values."""
    if not values:
        return {}
    n = len(values)
    mean = math.fsum(values) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / n)
    return {
        f"{prefix}/mean": mean,
        f"{prefix}/std": std,
        f"{prefix}/max": float(max(values)),
        f"{prefix}/min": float(min(values)),
    }


def response_length(results: Sequence[EpisodeResult]) -> dict[str, float]:
    lengths = [float(sum(r.main.loss_mask)) for r in results]
    out = {k: v for k, v in spread("response_length", lengths).items() if not k.endswith("std")}
    if results:
        out["response_length/clip_ratio"] = sum(
            r.main.end_reason == "length" for r in results
        ) / len(results)
    ended = [n for n, r in zip(lengths, results, strict=True) if r.main.end_reason != "length"]
    if ended:
        out["completions/mean_terminated_length"] = math.fsum(ended) / len(ended)
        out["completions/max_terminated_length"] = max(ended)
        out["completions/min_terminated_length"] = min(ended)
    return out


def prompt_length(results: Sequence[EpisodeResult]) -> dict[str, float]:
    lengths = [float(r.main.prompt_len) for r in results]
    return {k: v for k, v in spread("prompt_length", lengths).items() if not k.endswith("std")}


def reward_stats(
    rewards: Sequence[float], groups: Mapping[str, Sequence[int]], advantages: Sequence[float]
) -> dict[str, float]:
    """Score and advantage spreads and the share of zero-std groups (before the filters)."""
    out = {**spread("critic/score", rewards), **spread("critic/advantages", advantages)}
    out |= {k: v for k, v in spread("critic/rewards", rewards).items() if not k.endswith("std")}
    if groups:
        flat = sum(1 for idx in groups.values() if len({rewards[i] for i in idx}) <= 1)
        out["critic/frac_reward_zero_std"] = flat / len(groups)
    return out


def tool_seconds(results: Sequence[EpisodeResult]) -> float:
    return math.fsum(c.latency_s for r in results for c in r.calls)


class PhaseTimer:
    """Seconds spent in a module's forward passes (the frozen reference's, here), read and reset
    per step; forward hooks, so the update code is untouched."""

    def __init__(self, module: Any | None) -> None:
        self.seconds, self._t0 = 0.0, 0.0
        if module is not None:
            module.register_forward_pre_hook(self._start)
            module.register_forward_hook(self._stop)

    def _start(self, *_: Any) -> None:
        self._t0 = time.perf_counter()

    def _stop(self, *_: Any) -> None:
        self.seconds += time.perf_counter() - self._t0

    def take(self) -> float:
        s, self.seconds = self.seconds, 0.0
        return s


def perf_metrics(
    metrics: Mapping[str, float], step_s: float, cumulative: float
) -> dict[str, float]:
    """Throughput and peak memory of one step: tokens (``perf/total_num_tokens`` when the trainer
    counts every token, else the trained ones) and samples (``n``) per second, the run's
    cumulative tokens (``cumulative``: before this step), peak RSS and, on CUDA, peak allocated and
    reserved memory."""
    tokens = metrics.get("perf/total_num_tokens", metrics.get("tokens/trained", 0.0))
    out = {
        "perf/total_num_tokens": float(tokens),
        "perf/cumulative_tokens": cumulative + float(tokens),
        "perf/max_rss_gb": _peak_rss_bytes() / 2**30,
    }
    if step_s > 0:
        out["perf/time_per_step"] = step_s
        out["perf/throughput"] = float(tokens) / step_s
        if "n" in metrics:
            out["perf/samples_per_s"] = float(metrics["n"]) / step_s
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out["perf/max_memory_allocated_gb"] = torch.cuda.max_memory_allocated() / 2**30
        out["perf/max_memory_reserved_gb"] = torch.cuda.max_memory_reserved() / 2**30
    return out


def _peak_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports KiB
