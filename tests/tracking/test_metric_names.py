"""Issue 49 item 1: the step metrics under verl's names (TRL's where verl has none), the metrics a
verl or TRL user looks for, hand-worked numbers in and out; the old names are gone and
docs/tracking.md maps each to its new one."""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from paravt.rl import mfu
from paravt.rl.loss import ClipKL, grpo_terms
from paravt.rl.step_stats import perf_metrics, prompt_length, response_length, reward_stats
from paravt.rl.update import UpdateStats
from paravt.tracking.names import RL_RENAMED, SFT_RENAMED

DOC = Path(__file__).resolve().parents[2] / "docs" / "tracking.md"


def test_the_update_logs_verls_actor_names_and_trls_clip_ratios() -> None:
    stats = UpdateStats(
        loss=1.0,
        policy_loss=0.9,
        kl=0.05,
        clip_frac=0.5,
        grad_norm=2.0,
        n_tokens=8,
        logprob_mismatch=0.0,
        skipped=False,
        entropy=1.5,
        ppo_kl=0.0,
        clip_high=0.125,
    )
    m = stats.to_metrics()
    assert (m["actor/loss"], m["actor/pg_loss"], m["actor/kl_loss"]) == (1.0, 0.9, 0.05)
    assert (m["actor/pg_clipfrac"], m["actor/entropy"], m["actor/grad_norm"]) == (0.5, 1.5, 2.0)
    assert (m["clip_ratio/low_mean"], m["clip_ratio/high_mean"]) == (0.375, 0.125)
    assert not set(m) & set(RL_RENAMED)


def test_clip_high_is_the_share_clipped_above_with_a_positive_advantage() -> None:
    """4 tokens: ratio 1.5 with A>0 (clipped at 1.2: high), 0.5 with A<0 (clipped at 0.8: low),
    1.0 with A>0 (inside), 1.5 with A<0 (the unclipped term is the larger: not clipped)."""
    ratio = torch.tensor([[1.5, 0.5, 1.0, 1.5]], dtype=torch.float64)
    adv = torch.tensor([[1.0, -1.0, 1.0, -1.0]], dtype=torch.float64)
    old = torch.zeros_like(ratio)
    t = grpo_terms(ratio.log(), old, adv, None, clip=ClipKL(clip_eps=0.2))
    assert float(t.clip_frac) == pytest.approx(0.5) and t.clip_high is not None
    assert float(t.clip_high) == pytest.approx(0.25)


def _episode(prompt: int, sampled: int, end: str) -> Any:
    main = SimpleNamespace(
        loss_mask=(0,) * prompt + (1,) * sampled, end_reason=end, prompt_len=prompt
    )
    return SimpleNamespace(main=main)


def test_lengths_prompt_response_and_trls_terminated_ones() -> None:
    eps = [_episode(10, 4, "answer"), _episode(20, 8, "length"), _episode(30, 6, "max_turns")]
    r = response_length(eps)
    assert (r["response_length/mean"], r["response_length/max"], r["response_length/min"]) == (
        6.0,
        8.0,
        4.0,
    )
    assert r["response_length/clip_ratio"] == pytest.approx(1 / 3)
    assert r["completions/mean_terminated_length"] == 5.0  # 4 and 6: the truncated 8 is out
    assert (r["completions/max_terminated_length"], r["completions/min_terminated_length"]) == (
        6.0,
        4.0,
    )
    assert prompt_length(eps) == {
        "prompt_length/mean": 20.0,
        "prompt_length/max": 30.0,
        "prompt_length/min": 10.0,
    }
    every_one_cut = response_length([_episode(5, 3, "length")])
    assert "completions/mean_terminated_length" not in every_one_cut


def test_critic_rewards_and_the_step_time() -> None:
    out = reward_stats([1.0, 0.0, 0.5, 0.5], {"a": [0, 1], "b": [2, 3]}, [0.5, -0.5])
    assert (out["critic/rewards/mean"], out["critic/rewards/max"], out["critic/rewards/min"]) == (
        0.5,
        1.0,
        0.0,
    )
    assert out["critic/frac_reward_zero_std"] == 0.5  # group b: 0.5 and 0.5
    perf = perf_metrics({"perf/total_num_tokens": 300.0}, 2.0, 100.0)
    assert perf["perf/time_per_step"] == 2.0 and perf["perf/throughput"] == 150.0


def test_mfu_is_the_update_flop_rate_over_the_measured_limit() -> None:
    """hidden 4, inter 8, heads_dim 4, kv_dim 2, vocab 10, 1 layer: per-layer matmul params
    4·(4+2)·2 + 3·4·8 = 144, + lm_head 40 = 184; forward 2·184 per token + attention
    2·4·1 per T²."""
    s = mfu.Shapes(hidden=4, inter=8, heads_dim=4, kv_dim=2, vocab=10, layers=1)
    f = mfu.Flops.of_shapes(s)
    assert (f.per_token, f.attn_per_t2) == (368.0, 8.0)
    assert f.forward([3]) == 368.0 * 3 + 8.0 * 9
    assert f.train([3], passes=2) == 6 * (368.0 * 3 + 72.0)
    m = mfu.Mfu(s, limit=1000.0).metrics("perf/mfu/actor", [3], 2.0)
    assert m == {
        "perf/mfu/actor": 3 * (368.0 * 3 + 72.0) / 2.0 / 1000.0,
        "perf/mfu_limit_flops": 1000.0,
    }
    assert mfu.Mfu(None).metrics("perf/mfu/actor", [3], 2.0) == {}
    assert mfu.Mfu(s, limit=1000.0).metrics("perf/mfu/actor", [3], 0.0) == {}
    assert mfu.Mfu(s).metrics("perf/mfu/actor", [3], 2.0) == {}  # no limit measured


def test_the_measured_limit_is_a_positive_rate_of_the_models_shapes() -> None:
    s = mfu.Shapes(hidden=16, inter=32, heads_dim=16, kv_dim=8, vocab=64, layers=1)
    rate, per_shape = mfu.matmul_limit(s, 64, 2)
    assert rate > 0 and set(per_shape) == {"q", "k", "v", "o", "gate", "up", "down", "lm_head"}
    assert math.isfinite(mfu.measured_limit(s, "cpu", torch.float32))


@pytest.mark.parametrize("renamed", [RL_RENAMED, SFT_RENAMED])
def test_docs_map_every_old_name_to_its_new_one(renamed: dict[str, str]) -> None:
    text = DOC.read_text(encoding="utf-8")
    for old, new in renamed.items():
        assert re.search(rf"\| `{re.escape(old)}` \| `{re.escape(new)}` \|", text), (old, new)
