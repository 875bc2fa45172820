import pytest

from paravt.errors import ConfigError, DataError
from paravt.rl.filters import (
    RANK,
    ZERO_VARIANCE,
    DroppedGroup,
    drop_zero_variance,
    rank_by_std,
)


def test_zero_variance_groups_are_dropped_with_their_reason() -> None:
    groups = {
        "p1": [0.8, 0.8, 0.8, 0.8],  # all right: advantages all 0
        "p2": [1.0, 0.0, 0.0, 0.0],
        "p3": [-0.2, -0.2, -0.2, -0.2],  # all wrong (bias only)
        "p4": [0.5, 0.5 + 1e-12, 0.5, 0.5],  # within tol 1e-9: zero variance
        "p5": [0.5, 0.5 + 1e-6, 0.5, 0.5],  # spread 1e-6 > tol: kept
    }
    res = drop_zero_variance(groups)
    assert res.kept == ("p2", "p5")  # input order
    assert res.dropped == tuple(DroppedGroup(p, ZERO_VARIANCE) for p in ("p1", "p3", "p4"))
    assert res.drop_counts == {ZERO_VARIANCE: 3}


def test_rank_by_std_keeps_the_largest_spreads() -> None:
    # sample stds: a [1,0,1,0] → sqrt(1/3) = 0.5774; b [1,1,1,0] → sqrt(0.75/3) = 0.5;
    # c [0.2,0,0,0] → 0.1; d [2,0,0,0] → 1.0
    groups = {"a": [1, 0, 1, 0], "b": [1, 1, 1, 0], "c": [0.2, 0, 0, 0], "d": [2, 0, 0, 0]}
    res = rank_by_std(groups, keep=2)
    assert res.kept == ("d", "a")  # rank order, std descending
    assert res.dropped == (DroppedGroup("b", RANK), DroppedGroup("c", RANK))
    assert res.drop_counts == {RANK: 2}


def test_rank_ties_break_by_prompt_id_whatever_the_input_order() -> None:
    # same multiset of rewards in different orders ⇒ equal std; ids decide: "m" < "x" < "z"
    groups = {"z": [0.0, 1.0, 0.3], "m": [1.0, 0.3, 0.0], "x": [0.3, 0.0, 1.0], "q": [0, 0, 0.1]}
    assert rank_by_std(groups, keep=2).kept == ("m", "x")
    assert rank_by_std(dict(reversed(list(groups.items()))), keep=2).kept == ("m", "x")


def test_rank_keep_at_least_all_keeps_everything() -> None:
    res = rank_by_std({"a": [0, 1], "b": [0, 0]}, keep=5)
    assert res.kept == ("a", "b") and res.dropped == () and res.drop_counts == {}


def test_bad_filter_inputs_raise() -> None:
    with pytest.raises(ConfigError):
        rank_by_std({"a": [0, 1]}, keep=-1)
    with pytest.raises(DataError, match="no rewards"):
        drop_zero_variance({"a": []})
