import math

import pytest

from paravt.errors import DataError
from paravt.rl.advantages import (
    broadcast_to_trajectories,
    group_advantages,
    grouped,
    sample_std,
)

TOL = 1e-9


def test_std_normalised_advantages_use_the_sample_std_like_verl() -> None:
    # rewards [1, 0, 0, 0]: mean 0.25; squared deviations 0.5625 + 3·0.0625 = 0.75;
    # sample std = sqrt(0.75 / 3) = 0.5 (the population std would be sqrt(0.75/4) = 0.4330)
    # ⇒ A = [0.75, −0.25, −0.25, −0.25] / (0.5 + 1e-6)
    adv = group_advantages([1.0, 0.0, 0.0, 0.0], std_normalize=True)
    expected = [x / 0.500001 for x in (0.75, -0.25, -0.25, -0.25)]
    assert adv == pytest.approx(expected, abs=TOL)
    assert adv[0] == pytest.approx(1.4999970000059999, abs=TOL)


def test_without_std_normalisation_advantages_are_only_centred() -> None:
    # rewards [1.5, 0.5, 1.0]: mean 1.0 ⇒ A = [0.5, −0.5, 0.0]
    assert group_advantages([1.5, 0.5, 1.0], std_normalize=False) == pytest.approx(
        [0.5, -0.5, 0.0], abs=TOL
    )


def test_eps_keeps_a_zero_variance_group_at_zero() -> None:
    # [0.7]*4: r − mean = 0 everywhere, std 0 ⇒ 0 / (0 + 1e-6) = 0, no division by zero
    assert group_advantages([0.7] * 4, std_normalize=True) == [0.0] * 4


def test_singleton_group_follows_verl_mean_zero_std_one() -> None:
    # verl sets mean 0 and std 1 for a group of one: A = r / (1 + eps) or r
    assert group_advantages([0.8], std_normalize=True) == pytest.approx([0.8 / 1.000001], abs=TOL)
    assert group_advantages([0.8], std_normalize=False) == [0.8]


@pytest.mark.parametrize("std_normalize", [True, False])
def test_reward_bias_is_removed_by_centring(std_normalize: bool) -> None:
    # paper bias −0.2 added to every reward: the mean moves by −0.2, deviations and std do not
    rewards = [1.3, 0.0, 0.4, 1.0, 0.0, 0.9, 0.1, 0.2]
    biased = [r - 0.2 for r in rewards]
    assert sum(biased) / 8 == pytest.approx(sum(rewards) / 8 - 0.2, abs=TOL)  # raw mean moved
    plain = group_advantages(rewards, std_normalize=std_normalize)
    with_bias = group_advantages(biased, std_normalize=std_normalize)
    assert with_bias == pytest.approx(plain, abs=1e-12)


def test_std_normalised_group_has_unit_sample_std() -> None:
    adv = group_advantages([0.3, 1.1, 0.0, 2.0, 0.5], std_normalize=True)
    assert math.fsum(adv) == pytest.approx(0.0, abs=1e-12)
    assert sample_std(adv) == pytest.approx(1.0, abs=1e-5)  # 1 − eps/std, eps = 1e-6


def test_grouped_matches_per_group_calls_for_interleaved_ids() -> None:
    # group a: [1, 0] → mean .5, sample std sqrt(0.5) ⇒ ±0.5/0.70710778 = ±0.70710578
    # group b: [2, 2, 5] → mean 3, sample std sqrt((1+1+4)/2) = sqrt(3) ⇒ [−1, −1, 2]/1.7320518
    rewards = [1.0, 2.0, 0.0, 2.0, 5.0]
    gids = ["a", "b", "a", "b", "b"]
    adv = grouped(rewards, gids, std_normalize=True)
    s2, s3 = math.sqrt(0.5) + 1e-6, math.sqrt(3.0) + 1e-6
    assert adv == pytest.approx([0.5 / s2, -1 / s3, -0.5 / s2, -1 / s3, 2 / s3], abs=TOL)


def test_grouped_rejects_mismatched_lengths() -> None:
    with pytest.raises(DataError, match="one group id per reward"):
        grouped([1.0, 0.0], ["a"], std_normalize=True)


def test_empty_or_non_finite_rewards_raise() -> None:
    with pytest.raises(DataError):
        group_advantages([], std_normalize=True)
    with pytest.raises(DataError, match="finite"):
        group_advantages([1.0, math.nan], std_normalize=False)


def test_sub_agent_trajectories_take_their_episodes_advantage() -> None:
    episode_adv = {"e0": 1.25, "e1": -0.5}
    # main of e0, two subs of e0, main of e1, one sub of e1 (in any order)
    ids = ["e0", "e0", "e1", "e0", "e1"]
    assert broadcast_to_trajectories(episode_adv, ids) == [1.25, 1.25, -0.5, 1.25, -0.5]


def test_broadcast_names_missing_episodes() -> None:
    with pytest.raises(DataError, match="e9"):
        broadcast_to_trajectories({"e0": 1.0}, ["e0", "e9"])
