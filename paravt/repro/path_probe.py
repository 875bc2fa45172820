"""The reward-by-path probe of a checkpoint (issue 47, M3): K rollouts per RL prompt at the RL
temperature for each (variant, overview budget), each variant rolled out and scored with ITS OWN
episode settings and reward (vanilla: no think prefix, plain weights; PARA-GRPO: prefix, suffix
weights, anchor), every rollout classified by ``paravt.repro.paths.classify_path`` and the table
built by ``paths.path_table``. No update is made: this is the initial condition GRPO starts from."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paravt.config import TrainConfig
from paravt.repro.paths import AdvantageFn, PathRow, path_table
from paravt.rewards.metrics import classify_path


@dataclass(frozen=True)
class PathProbeSpec:
    """What the probe rolls out: ``k`` rollouts (one GRPO group) for each of the first
    ``prompts`` RL prompts, at each budget of ``budgets``, for each variant of ``variants``."""

    variants: tuple[str, ...] = ("vanilla_grpo", "paragrpo")
    budgets: tuple[int, ...] = (4, 64)
    k: int = 8
    prompts: int | None = 25  # 25 prompts × 8 = 200 rollouts per cell
    seed: int = 0


def _rows_for_cell(
    model: str,
    rl_parquet: Path,
    root: Path | None,
    vcfg: TrainConfig,
    *,
    n: int,
    k: int,
    prompts: int | None,
    seed: int,
) -> list[tuple[PathRow, dict[str, Any]]]:
    from paravt.agent import EpisodeSettings, episode_reward
    from paravt.agent.inputs import load_episode_inputs
    from paravt.repro.probe import sample_results
    from paravt.rewards import RewardWeights

    inputs = load_episode_inputs(rl_parquet, root, nframes=n, limit=prompts)
    if not inputs:
        raise ValueError(f"{rl_parquet}: no usable RL prompt for the path probe")
    settings = EpisodeSettings.from_config(vcfg, training=True)  # as the RL rollouts run
    weights = RewardWeights.from_config(vcfg.reward)
    groups = [i for i in range(len(inputs)) for _ in range(k)]
    results = sample_results(
        model,
        inputs,
        settings,
        k=k,
        seed=seed,
        temperature=vcfg.sampling.temperature,
        config=vcfg,
        id_prefix=f"path-{n}",
    )
    out: list[tuple[PathRow, dict[str, Any]]] = []
    for g, res in zip(groups, results, strict=True):
        b = episode_reward(res, weights)
        path = classify_path(
            executed_calls=res.n_successful_calls,
            written_calls=b.n_calls,
            tool_code=b.tool_code,
            answered=b.finished,
        )
        raw: dict[str, Any] = {"path": path, "group": g, "acc": b.acc, "reward": b.reward}
        # the reward's unweighted terms and R_fmt's parts: which term a path earns its reward by
        raw |= {"terms": dict(b.terms), "format_parts": dict(b.components)}
        raw |= {"answer": b.answer, "completion": res.completion}
        # what the tools returned (each call's window, error or sub-agent report): the answer turn
        # read these, and `completion` holds only the main agent's own turns
        raw["calls"] = [c.to_json() for c in res.calls]
        out.append((PathRow(path, g, b.acc, b.reward), raw))
    return out


def trainer_advantages(vcfg: TrainConfig) -> AdvantageFn:
    """The group step of ``vcfg``'s trainer: rewards × ``rl.reward_scale`` clipped to
    ±``rl.reward_clip``, then normalised within each group. The batch normalisation that follows
    in training is one affine map of the whole step: it rescales the executed − direct contrast
    and keeps its sign, so the probe stops before it."""
    from paravt.rl.advantages import grouped, scale_and_clip

    rl = vcfg.rl

    def adv(rewards: Sequence[float], groups: Sequence[Hashable]) -> list[float]:
        scaled = scale_and_clip(rewards, rl.reward_scale, rl.reward_clip)
        return grouped(scaled, groups, std_normalize=rl.std_normalize)

    return adv


def reward_by_path(
    model: str, rl_parquet: Path, cfg: TrainConfig, spec: PathProbeSpec, root: Path | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``({variant: {str(n): path_table}}, raw rollouts)`` of ``model`` on the prompts of
    ``rl_parquet`` (videos under ``root``; see the module doc)."""
    from paravt.repro.variants import VARIANTS, with_overrides

    tables: dict[str, Any] = {}
    raw: list[dict[str, Any]] = []
    for name in spec.variants:
        vcfg = with_overrides(cfg, dict(VARIANTS[name].overrides))
        tables[name] = {}
        for n in spec.budgets:
            cell = _rows_for_cell(
                model,
                rl_parquet,
                root,
                vcfg,
                n=n,
                k=spec.k,
                prompts=spec.prompts,
                seed=spec.seed,
            )
            tables[name][str(n)] = path_table(
                [r for r, _ in cell], seed=spec.seed, advantages=trainer_advantages(vcfg)
            )
            raw += [{"variant": name, "n": n, **x} for _, x in cell]
    return tables, raw


__all__ = ["PathProbeSpec", "reward_by_path"]
