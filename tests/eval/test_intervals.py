"""Intervals over seeds and questions (paravt/repro/intervals.py), hand-worked."""

from __future__ import annotations

import math

import pytest

from paravt.repro.intervals import bootstrap_interval, paired_bootstrap_diff, t975, t_interval


def test_t_interval_of_three_seeds() -> None:
    # mean 2, s = 1, t(0.975, 2) = 4.303: half-width 4.303 / sqrt(3) = 2.4843
    iv = t_interval([1.0, 2.0, 3.0])
    assert iv.mean == 2.0 and iv.n == 3
    assert iv.lo == pytest.approx(2 - 4.303 / math.sqrt(3)) and iv.hi == pytest.approx(
        2 + 4.303 / math.sqrt(3)
    )
    assert iv.hi - iv.lo == pytest.approx(4.9687, abs=1e-3)


def test_one_seed_has_no_interval_and_equal_seeds_have_zero_width() -> None:
    one = t_interval([0.4])
    assert (one.mean, one.lo, one.hi, one.n) == (0.4, None, None, 1)
    same = t_interval([0.3, 0.3])
    assert same.lo == pytest.approx(0.3) and same.hi == pytest.approx(0.3)


def test_t_quantiles_table_and_expansion() -> None:
    assert t975(1) == 12.706 and t975(30) == 2.042
    assert t975(31) == pytest.approx(2.0395, abs=5e-4)  # table value 2.040
    assert t975(1000) == pytest.approx(1.9623, abs=5e-4)
    with pytest.raises(ValueError):
        t975(0)


def test_bootstrap_of_two_questions_spans_all_resample_means() -> None:
    # resample means of [0, 1] are 0 (p=1/4), 0.5 (1/2), 1 (1/4): the 2.5% / 97.5% points are 0 and
    # 1
    iv = bootstrap_interval([0.0, 1.0], seed=1)
    assert (iv.mean, iv.lo, iv.hi) == (0.5, 0.0, 1.0)


def test_bootstrap_is_seeded_and_close_to_the_normal_width() -> None:
    values = [1.0] * 50 + [0.0] * 50
    a, b = bootstrap_interval(values, seed=3), bootstrap_interval(values, seed=3)
    assert a == b
    # normal approximation: 0.5 ± 1.96 * 0.05 = [0.402, 0.598]
    assert a.lo == pytest.approx(0.402, abs=0.02) and a.hi == pytest.approx(0.598, abs=0.02)
    const = bootstrap_interval([0.7] * 5)
    assert const.lo == pytest.approx(0.7) and const.hi == pytest.approx(0.7)


def test_paired_difference_and_bad_input() -> None:
    d = paired_bootstrap_diff([1, 1, 1, 0], [0, 1, 0, 0], seed=0)
    assert d.mean == 0.5 and 0.0 <= d.lo <= 0.5 <= d.hi <= 1.0
    with pytest.raises(ValueError, match="equal lengths"):
        paired_bootstrap_diff([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="at least one"):
        bootstrap_interval([])
    with pytest.raises(ValueError, match="finite"):
        t_interval([1.0, float("nan")])


def test_bounds_clip_a_rate_interval_to_its_range() -> None:
    # mean 0.5, s = 0.7071, t(0.975, 1) = 12.706: half-width 6.353, clipped to [0, 1]
    iv = t_interval([0.0, 1.0], bounds=(0.0, 1.0))
    assert (iv.mean, iv.lo, iv.hi) == (0.5, 0.0, 1.0)
    assert t_interval([0.0, 1.0]).hi == pytest.approx(0.5 + 6.353)
