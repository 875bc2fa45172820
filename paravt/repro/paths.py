"""Reward by path: the paradox's precondition measured on a checkpoint before any RL update
(issue 47, M3; docs/repro.md, "Reward by path").

Every rollout takes exactly one PATH (``paravt.rewards.metrics.classify_path``, also logged as
``path/<name>`` shares at every RL step), decided in this order:

1. ``executed``: at least one tool call ran (``EpisodeResult.n_successful_calls`` > 0);
2. ``written_not_run``: the model wrote a call (a ``<tool_call>`` block, well-formed or not, or a
   ``<tool_code>`` block) and none ran: malformed JSON, a form the parser does not run;
3. ``direct``: no call written, and the model finished an answer (an ``<answer>`` block or text
   after ``</think>``);
4. ``broken``: no call written and no finished answer (e.g. a think that never closed: the reward
   still reads its last line as the answer, and it is almost always wrong).

Per path: its share of the rollouts, its accuracy, its mean reward and its mean GRPO advantage
(rewards normalised within each prompt's group, as the trainer does), each with a seeded bootstrap
interval. Two contrasts and two rates:

- ``call_minus_direct``: mean reward and mean advantage of ``executed`` minus ``direct``
  (unpaired bootstrap): what a call that RAN earns over a direct answer; the paper's Tool
  Necessity Gap at n = 64 needs it near zero or below.
- ``attempt_minus_skip``: the same two means for the call DECISION: every rollout that wrote a
  call (``executed`` + ``written_not_run``) minus every rollout that wrote none (``direct`` +
  ``broken``). The first update moves the decision to call by this advantage (its sign is
  ``predicted_sign``): the calls that lose their credit count against it, which
  ``call_minus_direct`` leaves out (Format Fragility acts here: a robust call path can out-earn a
  direct answer while the decision does not pay).
- fragility: ``call_break_rate`` = written_not_run / (executed + written_not_run), the share of
  attempted calls that lose their credit, against ``direct_break_rate`` = broken / (direct +
  broken). The paper's Format Fragility needs the first above the second.

Pure Python + numpy; the rollouts come from ``paravt.repro.path_probe``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from paravt.repro.intervals import Interval, bootstrap_interval
from paravt.rewards.metrics import PATHS, PathName
from paravt.rl.advantages import grouped

AdvantageFn = Callable[[Sequence[float], Sequence[Hashable]], list[float]]


@dataclass(frozen=True)
class PathRow:
    """One scored rollout: its path, the prompt group it was sampled in, R_acc and the reward."""

    path: PathName
    group: Hashable
    acc: float
    reward: float


def grpo_advantages(rewards: Sequence[float], groups: Sequence[Hashable]) -> list[float]:
    """Group-normalised advantages (mean-centred, divided by the group's sample std)."""
    return grouped(rewards, groups, std_normalize=True)


def unpaired_bootstrap_diff(
    a: Sequence[float], b: Sequence[float], *, seed: int = 0, n_boot: int = 2000
) -> Interval | None:
    """mean(a) − mean(b) over two independent samples, each resampled on its own; None when either
    is empty (no difference to measure). ``n`` is the smaller sample's size."""
    if not a or not b:
        return None
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    mx = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    my = y[rng.integers(0, y.size, size=(n_boot, y.size))].mean(axis=1)
    lo, hi = np.percentile(mx - my, [2.5, 97.5])
    return Interval(float(x.mean() - y.mean()), float(lo), float(hi), int(min(x.size, y.size)))


def _interval(values: Sequence[float], seed: int) -> dict[str, float | int | None] | None:
    return bootstrap_interval(values, seed=seed).to_dict() if values else None


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def path_table(
    rows: Sequence[PathRow], *, seed: int = 0, advantages: AdvantageFn = grpo_advantages
) -> dict[str, Any]:
    """The reward-by-path table of ``rows`` (JSON-ready; see the module docstring)."""
    if not rows:
        return {"n": 0, "paths": {}, "call_minus_direct": None, "attempt_minus_skip": None}
    adv = advantages([r.reward for r in rows], [r.group for r in rows])
    by: dict[PathName, list[int]] = {p: [] for p in PATHS}
    for i, r in enumerate(rows):
        by[r.path].append(i)
    n = len(rows)
    paths: dict[str, Any] = {}
    for p in PATHS:
        idx = by[p]
        paths[p] = {
            "n": len(idx),
            "share": len(idx) / n,
            "acc": _interval([rows[i].acc for i in idx], seed),
            "reward": _interval([rows[i].reward for i in idx], seed),
            "advantage": _interval([adv[i] for i in idx], seed),
        }
    rewards = [r.reward for r in rows]
    n_ex, n_wr, n_di, n_br = (len(by[p]) for p in PATHS)
    return {
        "n": n,
        "paths": paths,
        "call_minus_direct": _contrast(rewards, adv, by["executed"], by["direct"], seed),
        "attempt_minus_skip": _contrast(
            rewards,
            adv,
            by["executed"] + by["written_not_run"],
            by["direct"] + by["broken"],
            seed,
        ),
        "call_break_rate": _rate(n_wr, n_ex + n_wr),
        "direct_break_rate": _rate(n_br, n_di + n_br),
    }


def _contrast(
    rewards: Sequence[float], adv: Sequence[float], a: list[int], b: list[int], seed: int
) -> dict[str, Any]:
    """Mean reward and mean advantage of the rollouts ``a`` minus those of ``b`` (unpaired
    bootstrap; None where either side is empty)."""
    out: dict[str, Any] = {}
    for name, v in (("reward", rewards), ("advantage", adv)):
        d = unpaired_bootstrap_diff([v[i] for i in a], [v[i] for i in b], seed=seed)
        out[name] = None if d is None else d.to_dict()
    return out


def predicted_sign(table: Mapping[str, Any]) -> int | None:
    """+1 / −1 when the call DECISION's advantage interval (``attempt_minus_skip``: wrote a call
    minus wrote none) excludes 0 (GRPO's first update pushes calling up / down), 0 when it
    straddles 0, None when either side is empty."""
    diff = (table.get("attempt_minus_skip") or {}).get("advantage")
    if diff is None or diff["lo"] is None or diff["hi"] is None:
        return None
    if diff["lo"] > 0:
        return 1
    if diff["hi"] < 0:
        return -1
    return 0


__all__ = [
    "PathRow",
    "grpo_advantages",
    "path_table",
    "predicted_sign",
    "unpaired_bootstrap_diff",
]
