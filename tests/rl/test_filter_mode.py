"""``rl.filter`` (issue 38 item 6): offline (the paper's: the DAPO pre-filter ran once before RL)
trains every group a step rolls out; online keeps today's oversample, zero-variance drop and
rank by reward std."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from paravt.config import TrainConfig
from paravt.rl.cursor import rollout_prompts
from paravt.rl.filters import filter_groups


def _cfg(**rl: object) -> TrainConfig:
    return TrainConfig.model_validate({"rl": {"prompts_per_step": 2, "oversample": 1.5, **rl}})


def _filter(cfg: TrainConfig, rewards: list[float], crashed: int | None = None):
    groups = {"a": [0, 1], "b": [2, 3], "c": [4, 5]}
    results = [SimpleNamespace(backend_errors=0, crashed=i == crashed) for i in range(len(rewards))]
    return filter_groups(cfg.rl, groups, rewards, results)  # type: ignore[arg-type]


def test_offline_is_the_default_and_rolls_out_only_the_prompts_it_trains() -> None:
    assert TrainConfig().rl.filter == "offline"
    assert rollout_prompts(_cfg().rl) == 2
    assert rollout_prompts(_cfg(filter="online").rl) == 3  # ceil(1.5 × 2)


def test_offline_trains_every_group_zero_variance_included() -> None:
    kept, counts = _filter(_cfg(), [1.0, 1.0, 0.0, 1.0, 0.2, 0.2])
    assert kept == ["a", "b", "c"]
    assert counts["filter/zero_var_dropped"] == counts["filter/rank_dropped"] == 0.0


def test_online_drops_zero_variance_then_keeps_the_largest_std() -> None:
    kept, counts = _filter(
        _cfg(filter="online", prompts_per_step=1), [1.0, 1.0, 0.0, 1.0, 0.2, 0.4]
    )
    assert kept == ["b"]  # std 0.71 beats c's 0.14; a has none
    assert counts["filter/zero_var_dropped"] == 1.0 and counts["filter/rank_dropped"] == 1.0


@pytest.mark.parametrize("mode", ["offline", "online"])
def test_a_crashed_group_is_dropped_in_both_modes(mode: str) -> None:
    kept, counts = _filter(_cfg(filter=mode), [1.0, 0.0, 0.0, 1.0, 0.2, 0.4], crashed=0)
    assert "a" not in kept and counts["filter/error_dropped"] == 1.0
