"""Format under temperature sampling, measured: K rollouts per prompt of a checkpoint at τ
(default 0.7), scored with the ONE yardstick (``paravt.rewards.metrics.aggregate``: f_tau,
kappa, closure rates, tool_code_rate, skip_tool_rate) exactly as training logs them."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

from paravt.agent import EpisodeInput, EpisodeResult, EpisodeSettings, episode_reward, run_group
from paravt.config import TrainConfig
from paravt.rewards import RewardWeights
from paravt.rewards.metrics import aggregate


def sample_results(
    model: str,
    inputs: Sequence[EpisodeInput],
    settings: EpisodeSettings,
    *,
    k: int,
    seed: int = 0,
    temperature: float = 0.7,
    config: TrainConfig | None = None,
    id_prefix: str = "probe",
) -> list[EpisodeResult]:
    """Every input rolled out ``k`` times in a row from ``model`` at ``temperature`` (main agent
    and sub-agents, seeded); ``config``: the model and rollout sections the backend opens with
    (default: the defaults)."""
    from paravt.agent.backend import open_backend
    from paravt.config import ModelConfig, RolloutConfig

    if k < 1 or not inputs:
        raise ValueError(
            f"a format probe needs k ≥ 1 and at least one prompt (k={k}, prompts={len(inputs)})"
        )
    mc = ModelConfig() if config is None else config.model
    rc = RolloutConfig() if config is None else config.rollout
    backend = open_backend(mc.model_copy(update={"path": model}), rc)
    s = replace(
        settings,
        sampling=replace(settings.sampling, temperature=temperature, seed=seed),
        sub_sampling=replace(settings.sub_sampling, temperature=temperature, seed=seed),
    )
    batch = [inp for inp in inputs for _ in range(k)]
    try:
        return asyncio.run(
            run_group(
                batch,
                generator=backend.generator,
                codec=backend.codec,
                settings=s,
                tools=backend.tools,
                episode_ids=[f"{id_prefix}-{seed}-{i}" for i in range(len(batch))],
            )
        )
    finally:
        asyncio.run(backend.generator.aclose())


def sample_metrics(
    model: str,
    inputs: Sequence[EpisodeInput],
    settings: EpisodeSettings,
    *,
    k: int,
    seed: int = 0,
    temperature: float = 0.7,
) -> dict[str, float]:
    """Roll out every input ``k`` times from ``model`` at ``temperature`` (seeded) and aggregate."""
    from paravt.rl.grpo import rollout_record

    results = sample_results(model, inputs, settings, k=k, seed=seed, temperature=temperature)
    w = RewardWeights.default()
    return aggregate([rollout_record(r, episode_reward(r, w)) for r in results])
