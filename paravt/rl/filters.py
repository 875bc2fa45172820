"""Prompt and group filters of PARA-GRPO (docs/ARCHITECTURE.md §5). Pure Python, no torch.

Online (per step, PyVision-RL): ``drop_zero_variance`` removes groups whose G rewards are all
equal (their GRPO advantages are all 0, so they only dilute the token-mean); ``rank_by_std`` is the
oversample–filter–rank step: roll out more prompts than needed, keep the ``keep`` groups with the
largest reward std. The offline DAPO pre-filter lives with the data: ``paravt.rl.prefilter``.

Each filter returns a ``FilterResult`` with the kept ids and every dropped id with its reason, so
the trainer can log ``filter/<reason>`` counts; ``filter_groups`` is a step's whole filter (the
groups with a failure dropped first, then the online filters) with those counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from paravt.errors import ConfigError, DataError
from paravt.rl.advantages import sample_std

if TYPE_CHECKING:
    from paravt.agent import EpisodeResult
    from paravt.config import RLConfig

ZERO_VARIANCE = "zero_variance"
RANK = "rank"

_STD_DIGITS = 12  # stds equal to 12 decimals are ties (fsum order noise must not break them)


@dataclass(frozen=True)
class DroppedGroup:
    id: str
    reason: str


@dataclass(frozen=True)
class FilterResult:
    kept: tuple[str, ...]
    dropped: tuple[DroppedGroup, ...]

    @property
    def drop_counts(self) -> dict[str, int]:
        """Number of dropped ids per reason (only reasons that occurred)."""
        return dict(Counter(d.reason for d in self.dropped))


def _check_groups(groups: Mapping[str, Sequence[float]]) -> None:
    empty = [gid for gid, rewards in groups.items() if len(rewards) == 0]
    if empty:
        raise DataError(f"groups {empty[:5]} have no rewards; every group needs its G rewards")


def drop_zero_variance(groups: Mapping[str, Sequence[float]], tol: float = 1e-9) -> FilterResult:
    """Drop groups whose rewards all lie within ``tol`` of each other (max − min ≤ tol).

    A group of one reward has zero variance. Kept ids keep the input order.
    """
    _check_groups(groups)
    kept: list[str] = []
    dropped: list[DroppedGroup] = []
    for gid, rewards in groups.items():
        if max(rewards) - min(rewards) <= tol:
            dropped.append(DroppedGroup(gid, ZERO_VARIANCE))
        else:
            kept.append(gid)
    return FilterResult(tuple(kept), tuple(dropped))


def rank_by_std(groups: Mapping[str, Sequence[float]], keep: int) -> FilterResult:
    """Keep the ``keep`` groups with the largest reward std (sample std, as the advantages).

    Kept ids are in rank order: std descending, ties broken by prompt id ascending (so the
    result does not depend on the mapping's order). ``keep`` ≥ len(groups) keeps all of them.
    """
    if keep < 0:
        raise ConfigError(f"keep={keep} must be >= 0; set rl.prompts_per_step >= 1")
    _check_groups(groups)
    order = sorted(groups, key=lambda gid: (-round(sample_std(groups[gid]), _STD_DIGITS), gid))
    return FilterResult(tuple(order[:keep]), tuple(DroppedGroup(g, RANK) for g in order[keep:]))


def filter_groups(
    rl: RLConfig,
    groups: dict[str, list[int]],
    rewards: list[float],
    results: list[EpisodeResult],
) -> tuple[list[str], dict[str, float]]:
    """The online filters (``rl.filter`` online; offline keeps every group); a group with an
    inference-backend failure (a main or sub-agent request that errored, not model behaviour)
    or a crashed episode (an exception inside it) is dropped first, so a crash is never a
    training signal."""
    failed = {
        g
        for g, idx in groups.items()
        if any(results[i].backend_errors or results[i].crashed for i in idx)
    }
    by_group = {g: [rewards[i] for i in idx] for g, idx in groups.items() if g not in failed}
    kept = list(by_group)
    counts: dict[str, float] = {
        "filter/error_dropped": float(len(failed)),
        "filter/zero_var_dropped": 0.0,
        "filter/rank_dropped": 0.0,
        "episodes/crashed": float(sum(r.crashed for r in results)),
    }
    if rl.filter == "offline":
        return kept, counts
    if rl.drop_zero_variance:
        res = drop_zero_variance(by_group)
        kept = list(res.kept)
        counts["filter/zero_var_dropped"] = float(len(res.dropped))
    ranked = rank_by_std({g: by_group[g] for g in kept}, keep=rl.prompts_per_step)
    counts["filter/rank_dropped"] = float(len(ranked.dropped))
    return list(ranked.kept), counts
