"""The release's reward scaling and batch advantage normalisation (issue 38 item 8), by hand."""

import math

import pytest

from paravt.rl.advantages import batch_normalize, grouped


def test_batch_normalize_by_hand() -> None:
    # mean 1, sample std sqrt(((−1)² + 0² + 1²) / 2) = 1
    assert batch_normalize([0.0, 1.0, 2.0]) == pytest.approx([-1.0, 0.0, 1.0], abs=1e-5)
    assert batch_normalize([3.0, 3.0]) == [0.0, 0.0] and batch_normalize([]) == []


def test_scaling_is_a_no_op_under_group_std_normalisation() -> None:
    r, g = [0.1, 0.9, 0.5, 0.5, 1.2, 0.0], ["a", "a", "a", "b", "b", "b"]
    plain = grouped(r, g, std_normalize=True)
    scaled = grouped([10 * x for x in r], g, std_normalize=True)
    assert scaled == pytest.approx(plain, abs=1e-4)
    # without std normalisation the scale carries through (Dr.GRPO / PyVision-RL)
    assert grouped([10 * x for x in r], g, std_normalize=False)[0] == pytest.approx(-4.0)


def test_group_then_batch_by_hand() -> None:
    # group a = [0, 1]: mean 0.5, sample std sqrt(0.5) -> ±0.5 / 0.7071 = ±0.7071; group b is flat
    adv = grouped([0.0, 1.0, 5.0, 5.0], ["a", "a", "b", "b"], std_normalize=True)
    a = 0.5 / math.sqrt(0.5)
    assert adv == pytest.approx([-a, a, 0.0, 0.0], abs=1e-4)
    out = batch_normalize(adv)
    # mean 0; sample std of [−a, a, 0, 0] = sqrt(2a² / 3) with a = 0.7071 -> 0.5774
    assert out == pytest.approx([-0.7071 / 0.5774, 0.7071 / 0.5774, 0.0, 0.0], abs=1e-3)
