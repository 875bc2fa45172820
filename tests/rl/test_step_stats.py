"""The field's step statistics on hand-made numbers: spreads, the share of zero-std groups, and
throughput from the step's tokens and time."""

from __future__ import annotations

import pytest

from paravt.rl.step_stats import perf_metrics, reward_stats, spread


def test_spread_is_mean_population_std_max_min() -> None:
    assert spread("x", [1.0, 3.0]) == {"x/mean": 2.0, "x/std": 1.0, "x/max": 3.0, "x/min": 1.0}
    assert spread("x", []) == {}


def test_reward_stats_count_the_groups_with_equal_rewards() -> None:
    rewards = [1.0, 1.0, 0.0, 2.0, 0.5, 0.5]
    groups = {"a": [0, 1], "b": [2, 3], "c": [4, 5]}
    out = reward_stats(rewards, groups, advantages=[-1.0, 1.0])
    assert out["critic/frac_reward_zero_std"] == pytest.approx(2 / 3)
    assert (out["critic/score/max"], out["critic/score/min"]) == (2.0, 0.0)
    assert out["critic/score/mean"] == pytest.approx(5 / 6)
    assert (out["critic/advantages/mean"], out["critic/advantages/std"]) == (0.0, 1.0)


def test_perf_metrics_divide_the_steps_tokens_and_samples_by_its_time() -> None:
    out = perf_metrics({"perf/total_num_tokens": 300.0, "n": 6.0}, 2.0, cumulative=1000.0)
    assert out["perf/throughput"] == 150.0 and out["perf/samples_per_s"] == 3.0
    assert out["perf/cumulative_tokens"] == 1300.0 and out["perf/max_rss_gb"] > 0.01
    sft = perf_metrics({"tokens/trained": 40.0}, 4.0, cumulative=0.0)  # SFT: the trained tokens
    assert sft["perf/throughput"] == 10.0 and "perf/samples_per_s" not in sft
