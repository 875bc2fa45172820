"""95% intervals for the repro tables (issue 19): over seeds (Student t) and over questions
(seeded percentile bootstrap). Pure numpy, no I/O.

- ``t_interval(values)``: mean ± t(0.975, n−1)·s/√n, s the sample standard deviation (ddof 1).
  One value has no spread to measure: ``lo``/``hi`` are None (JSON null), never a made-up width.
- ``bootstrap_interval(values, seed)``: the 2.5th and 97.5th percentiles of the means of
  ``n_boot`` resamples of the items with replacement, drawn from ``default_rng(seed)``.
- ``paired_bootstrap_diff(a, b, seed)``: the same on per-item differences ``a − b`` (two modes on
  the SAME questions and checkpoint: "parallel beats sequential").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Student t quantiles t(0.975, df) for df = 1 … 30; beyond, the Cornish-Fisher expansion.
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)
_Z975 = 1.959964


@dataclass(frozen=True)
class Interval:
    mean: float
    lo: float | None
    hi: float | None
    n: int

    def to_dict(self) -> dict[str, float | int | None]:
        return {"mean": self.mean, "lo": self.lo, "hi": self.hi, "n": self.n}


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError(f"t quantile needs df ≥ 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def _clean(values: Sequence[float]) -> np.ndarray:
    arr = np.asarray([float(v) for v in values], dtype=float)
    if arr.size == 0:
        raise ValueError("an interval needs at least one value")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"values must be finite, got {values}")
    return arr


def t_interval(values: Sequence[float], *, bounds: tuple[float, float] | None = None) -> Interval:
    """Mean with a 95% Student-t interval (over seeds); ``bounds`` clip it to the metric's range
    (a rate stays in [0, 1]: with 2 seeds the t half-width is 12.7·s/√2)."""
    arr = _clean(values)
    mean = float(arr.mean())
    if arr.size < 2:
        return Interval(mean, None, None, 1)
    half = t975(arr.size - 1) * float(arr.std(ddof=1)) / math.sqrt(arr.size)
    lo, hi = mean - half, mean + half
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return Interval(mean, lo, hi, int(arr.size))


def bootstrap_interval(values: Sequence[float], *, seed: int = 0, n_boot: int = 2000) -> Interval:
    """Mean with a 95% percentile-bootstrap interval (over questions), seeded."""
    arr = _clean(values)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, arr.size, size=(n_boot, arr.size))
    means = arr[idx].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return Interval(float(arr.mean()), float(lo), float(hi), int(arr.size))


def paired_bootstrap_diff(
    a: Sequence[float], b: Sequence[float], *, seed: int = 0, n_boot: int = 2000
) -> Interval:
    """Mean of ``a − b`` over paired items with its bootstrap interval."""
    if len(a) != len(b):
        raise ValueError(f"paired values need equal lengths, got {len(a)} and {len(b)}")
    return bootstrap_interval([x - y for x, y in zip(a, b)], seed=seed, n_boot=n_boot)
