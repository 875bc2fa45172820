"""The release's training dynamics (issue 46 items 1, 4, 6, 7), each switch in both settings, by
hand: the reward clip, the KL as a per-token reward (or a loss term), the advantage normalisation
over tokens (or episodes), and which trajectories enter the loss (main only, or with sub-agents)."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from paravt.config import TrainConfig
from paravt.rl.advantages import grouped, scale_and_clip
from paravt.rl.grpo import GRPOTrainer
from paravt.rl.loss import ClipKL, kl_returns, shape_advantages, token_normalize
from paravt.rl.update import _LossArgs

# -- item 4: the reward clip ------------------------------------------------------------------


def test_the_clip_makes_rewards_of_2_2_and_3_0_score_the_same() -> None:
    # rewards 2.2, 3.0, 0.2 with the bias -0.2 included: 2.0, 2.8, 0.0; x 10 = 20, 28, 0
    r = [2.0, 2.8, 0.0]
    assert scale_and_clip(r, 10.0, 20.0) == pytest.approx([20.0, 20.0, 0.0])
    assert scale_and_clip(r, 10.0, None) == pytest.approx([20.0, 28.0, 0.0])
    assert scale_and_clip([-2.5], 10.0, 20.0) == pytest.approx([-20.0])  # both sides


def test_the_clip_changes_a_groups_advantages() -> None:
    g = ["p"] * 3
    # clipped [20, 20, 0]: mean 40/3, deviations 20/3, 20/3, -40/3, sample std sqrt(400/3)
    clipped = grouped(scale_and_clip([2.0, 2.8, 0.0], 10.0, 20.0), g, std_normalize=True)
    assert clipped == pytest.approx([0.5774, 0.5774, -1.1547], abs=1e-4)
    # unclipped [20, 28, 0]: mean 16, deviations 4, 12, -16, sample std sqrt(208) = 14.4222
    plain = grouped(scale_and_clip([2.0, 2.8, 0.0], 10.0, None), g, std_normalize=True)
    assert plain == pytest.approx([0.2774, 0.8321, -1.1094], abs=1e-4)


# -- item 6: the KL in the reward or in the loss ----------------------------------------------

# two episodes x three trained tokens; the policy's (at the update's start) and the reference's
# logprobs per token
POLICY = torch.tensor([-1.0, -0.5, -2.0, -0.3, -0.3, -0.3])
REF = torch.tensor([-1.2, -0.5, -1.0, -0.6, -0.1, -0.3])
COUNTS = (3, 3)
EPISODE_ADV = torch.tensor([1.0, 1.0, 1.0, -1.0, -1.0, -1.0])


def test_kl_returns_by_hand() -> None:
    # k1 = [0.2, 0, -1.0 | 0.3, -0.2, 0]; reward -0.1 * k1 = [-0.02, 0, 0.1 | -0.03, 0.02, 0]
    # return-to-go within each episode: [0.08, 0.1, 0.1 | -0.01, 0.02, 0]
    got = kl_returns(POLICY, REF, COUNTS, kl_coef=0.1, kind="k1")
    assert got.tolist() == pytest.approx([0.08, 0.1, 0.1, -0.01, 0.02, 0.0], abs=1e-6)


def test_kl_returns_are_clamped_and_never_differentiated() -> None:
    lp = torch.tensor([0.0, -30.0], requires_grad=True)
    got = kl_returns(lp, torch.tensor([0.0, 0.0]), (2,), kl_coef=1.0, kind="k1")
    assert got.tolist() == pytest.approx([10.0, 10.0])  # k1 = -30 clamped to -10, reward +10
    assert not got.requires_grad


def _shaped_and_loss(clip: ClipKL) -> tuple[list[float], float]:
    """The two episodes' per-token advantages as the update shapes them (KL returns added when
    the KL is a reward) and the loss at ratio 1 (logprobs = old = POLICY)."""
    args = _LossArgs(clip, 1.0)
    (adv,) = shape_advantages([EPISODE_ADV], [POLICY], [REF], [COUNTS], clip, token_norm=False)
    out = args.loss(POLICY[None], POLICY[None], adv[None], REF[None], 6)
    return adv.tolist(), float(out.loss)


def test_kl_in_the_reward_moves_the_advantages_and_not_the_loss_term() -> None:
    adv, loss = _shaped_and_loss(ClipKL(clip_eps=0.2, kl_coef=0.1, kl_kind="k1", kl_in="reward"))
    assert adv == pytest.approx([1.08, 1.1, 1.1, -1.01, -0.98, -1.0], abs=1e-6)
    # loss = token-mean(-A) = -(1.08 + 1.1 + 1.1 - 1.01 - 0.98 - 1.0) / 6; no KL term
    assert loss == pytest.approx(-0.29 / 6, abs=1e-6)


def test_kl_in_the_loss_keeps_the_advantages_and_adds_k3() -> None:
    adv, loss = _shaped_and_loss(ClipKL(clip_eps=0.2, kl_coef=0.1, kl_kind="k3", kl_in="loss"))
    assert adv == EPISODE_ADV.tolist()
    # d = ref - logp = [-0.2, 0, 1 | -0.3, 0.2, 0]; k3 = e^d - d - 1, summed 0.799234
    k3 = [math.exp(d) - d - 1 for d in (-0.2, 0.0, 1.0, -0.3, 0.2, 0.0)]
    assert sum(k3) == pytest.approx(0.799234, abs=1e-5)
    assert loss == pytest.approx(0.0 + 0.1 * 0.799234 / 6, abs=1e-6)  # -mean(A) = 0, + 0.013321


# -- item 7: advantage normalisation over tokens or over episodes ------------------------------


def test_token_normalisation_weighs_the_long_episode_more() -> None:
    # episode advantages +1 (3 tokens) and -1 (1 token): token mean 0.5, sample std 1
    a, b = shape_advantages(
        [torch.tensor([1.0, 1.0, 1.0]), torch.tensor([-1.0])],
        [torch.zeros(3), torch.zeros(1)],
        [None, None],
        [(3,), (1,)],
        ClipKL(clip_eps=0.2),
        token_norm=True,
    )
    assert a.tolist() + b.tolist() == pytest.approx([0.5, 0.5, 0.5, -1.5], abs=1e-5)
    assert token_normalize(torch.tensor([2.0])).tolist() == [0.0]  # one token: zero


def _fake_results(n_subs: list[int]) -> list[Any]:
    """Episodes with a main trajectory of 3 (long) or 1 trained tokens and n sub-agents each."""
    out = []
    for i, k in enumerate(n_subs):
        main = SimpleNamespace(episode_id=f"e{i}", n_sampled=3 if i % 2 == 0 else 1)
        subs = tuple(SimpleNamespace(episode_id=f"e{i}", n_sampled=5) for _ in range(k))
        out.append(SimpleNamespace(main=main, trajectories=(main, *subs)))
    return out


def _items(cfg: TrainConfig, rewards: list[float], n_subs: list[int]) -> tuple[list, dict]:
    trainer = GRPOTrainer.__new__(GRPOTrainer)
    trainer.cfg = cfg
    results = _fake_results(n_subs)
    breakdowns = [SimpleNamespace(reward=r) for r in rewards]
    groups = {"g": list(range(len(rewards)))}
    return trainer._items(results, breakdowns, groups, ["g"])  # type: ignore[arg-type]


def test_episode_unit_normalises_the_episode_advantages_in_the_trainer() -> None:
    cfg = TrainConfig()
    cfg.rl.adv_norm_unit = "episode"
    # rewards 1.0 and 0.0: group advantages +-0.7071, batch normalised: +-0.7071 again
    items, adv = _items(cfg, [1.0, 0.0], [0, 0])
    assert [it.advantage for it in items] == pytest.approx([0.7071, -0.7071], abs=1e-4)
    assert adv[0] == pytest.approx(0.7071, abs=1e-4)


def test_token_unit_leaves_the_batch_normalisation_to_the_update() -> None:
    cfg = TrainConfig()
    assert cfg.rl.adv_norm_unit == "token" and cfg.rl.adv_norm == "batch"
    cfg.rl.reward_scale, cfg.rl.std_normalize = 1.0, False
    items, _ = _items(cfg, [1.0, 0.0], [0, 0])
    assert [it.advantage for it in items] == pytest.approx([0.5, -0.5])  # group-centred only


# -- item 1: sub-agent trajectories out of the loss --------------------------------------------


def test_sub_agent_rows_are_absent_from_the_loss_batch_by_default() -> None:
    cfg = TrainConfig()
    assert cfg.rollout.train_subagents is False
    items, _ = _items(cfg, [1.0, 0.0], [2, 1])  # 3 sub-agent trajectories of 5 tokens each
    assert len(items) == 2 and [it.traj.n_sampled for it in items] == [3, 1]
    assert sum(it.traj.n_sampled for it in items) == 4  # the update's token count (global_tokens)


def test_sub_agent_rows_join_with_their_episodes_advantage_when_on() -> None:
    cfg = TrainConfig()
    cfg.rollout.train_subagents = True
    items, _ = _items(cfg, [1.0, 0.0], [2, 1])
    assert len(items) == 5 and sum(it.traj.n_sampled for it in items) == 4 + 15
    a = items[0].advantage
    assert [it.advantage for it in items] == pytest.approx([a, a, a, -a, -a])
