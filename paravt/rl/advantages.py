"""GRPO group advantages and multi-trajectory credit (docs/ARCHITECTURE.md §5). Pure Python, no
torch.

Convention (parity with verl ``compute_grpo_outcome_advantage``, verl/trainer/ppo/core_algos.py,
which uses ``torch.std`` = the SAMPLE std with Bessel's correction, divisor G − 1):

    A_i = (r_i − mean(r)) / (std_sample(r) + eps)   when std_normalize
    A_i =  r_i − mean(r)                            otherwise (Dr.GRPO / PyVision-RL)

A group of ONE reward follows verl too: mean 0 and std 1, so A = r / (1 + eps) (or r). With the
paper's G = 8 this never happens; it is kept so both engines give identical numbers.

Reward scaling, clip and batch normalisation [authors: reward_scaling 10, reward_clip 20,
reward_norm group, adv_norm batch]: the trainer multiplies the rewards (bias included) by
``rl.reward_scale`` and clips them to ±``rl.reward_clip`` before the group step
(``scale_and_clip``; the scale alone is a no-op with std normalisation, up to eps; the clip is not:
with scale 10 and bias −0.2 every reward ≥ 2.2 scores the same 20). With ``rl.adv_norm: batch``
the step's advantages are then centred and scaled by a batch mean and sample std: over the
episodes (``rl.adv_norm_unit: episode``, ``batch_normalize`` here) or over every trained token
(``token``, the release's; ``paravt.rl.loss.token_normalize``, in the update, where the tokens
and the KL returns are known).

Reward bias [paper, docs/ARCHITECTURE.md §4]: adding a constant b to every reward of a group shifts
the mean by b
and leaves the std unchanged, so centring removes it in both modes: the bias is a no-op for
groups of two or more and is kept (and logged) only for parity with the paper.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

from paravt.errors import DataError


def sample_std(values: Sequence[float]) -> float:
    """Std with divisor n − 1 (``torch.std``'s default); 0.0 for fewer than 2 values."""
    n = len(values)
    if n < 2:
        return 0.0
    mean = math.fsum(values) / n
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))


def scale_and_clip(rewards: Sequence[float], scale: float, clip: float | None) -> list[float]:
    """``scale · r`` clipped to [−clip, +clip] (``clip`` None: not clipped), for every reward
    (bias already included): the release's ``(r + bias) · reward_scaling`` clipped to
    ±``reward_clip`` before the group normalisation."""
    if clip is None:
        return [scale * r for r in rewards]
    return [min(max(scale * r, -clip), clip) for r in rewards]


def group_advantages(
    rewards: Sequence[float], *, std_normalize: bool, eps: float = 1e-6
) -> list[float]:
    """Advantages of the G rollouts of ONE prompt, in input order (see the module docstring)."""
    if len(rewards) == 0:
        raise DataError("group_advantages got an empty group; every group needs >= 1 reward")
    bad = [r for r in rewards if not math.isfinite(r)]
    if bad:
        raise DataError(f"rewards must be finite, got {bad}; fix the reward function's output")
    if len(rewards) == 1:  # verl: mean 0, std 1 for a singleton group
        mean, std = 0.0, 1.0
    else:
        mean, std = math.fsum(rewards) / len(rewards), sample_std(rewards)
    if std_normalize:
        return [(r - mean) / (std + eps) for r in rewards]
    return [r - mean for r in rewards]


def grouped(
    rewards: Sequence[float],
    group_ids: Sequence[Hashable],
    *,
    std_normalize: bool,
    eps: float = 1e-6,
) -> list[float]:
    """Advantages of a flat batch: ``rewards[i]`` belongs to group ``group_ids[i]`` (the prompt id).

    Groups may be interleaved in any order; the output keeps the input order.
    """
    if len(rewards) != len(group_ids):
        raise DataError(
            f"{len(rewards)} rewards but {len(group_ids)} group ids; pass one group id per reward"
        )
    members: dict[Hashable, list[int]] = {}
    for i, gid in enumerate(group_ids):
        members.setdefault(gid, []).append(i)
    out = [0.0] * len(rewards)
    for idx in members.values():
        adv = group_advantages([rewards[i] for i in idx], std_normalize=std_normalize, eps=eps)
        for i, a in zip(idx, adv, strict=True):
            out[i] = a
    return out


def batch_normalize(advantages: Sequence[float], eps: float = 1e-6) -> list[float]:
    """``(A − mean) / (std_sample + eps)`` over the whole batch (the release's ``adv_norm: batch``,
    applied after the group normalisation). One value, or all equal: all zeros."""
    if not advantages:
        return []
    mean = math.fsum(advantages) / len(advantages)
    std = sample_std(advantages)
    return [(a - mean) / (std + eps) for a in advantages]


def broadcast_to_trajectories(
    episode_adv: Mapping[str, float], traj_episode_ids: Sequence[str]
) -> list[float]:
    """Multi-trajectory credit: each trajectory (main or sub-agent) takes its episode's advantage.

    ``traj_episode_ids[j]`` is ``Trajectory.episode_id`` of trajectory j; the result is aligned
    with it. This is what verl does for an AgentLoop returning a list of outputs.
    """
    missing = sorted({e for e in traj_episode_ids if e not in episode_adv})
    if missing:
        raise DataError(
            f"no advantage for episode ids {missing[:5]}; compute episode advantages for every "
            "episode whose trajectories are trained"
        )
    return [float(episode_adv[e]) for e in traj_episode_ids]
