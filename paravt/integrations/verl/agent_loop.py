"""``paravt_agent``: our Episode as a verl 0.9 agent loop (docs/ARCHITECTURE.md §8).

One ``run`` = one rollout of one prompt (verl starts ``rollout.n`` = G sessions per prompt):

1. nFrames Gating: n = ``overview_budget(cfg, epoch, prompt id)`` (paravt.rl.gating: the local
   trainer's own branch) — the same n for the G sessions of a prompt (same key), a new draw each
   epoch (epoch = (global_step − 1) // steps_per_epoch); gating off: ``video.overview_nframes``.
2. ``run_episode`` with ``VerlServerGenerator`` (verl's server client) as the Generator.
3. Our composite reward on the episode's completion; the row's ``reward_score`` is clipped as the
   local trainer clips it (``rl.reward_clip`` on ``rl.reward_scale`` × reward, i.e. at
   ±reward_clip / reward_scale in reward units; verl applies no scale, a no-op under its std
   normalisation).
4. Outputs: the MAIN trajectory's ``AgentLoopOutput``, preceded (``rollout.train_subagents`` on)
   by one per sub-agent trajectory (call order). verl's v1 worker copies the last output's
   ``reward_score`` (and ``reward_extra_info``) to the others, and
   ``compute_advantage_for_multi_trajectories`` computes GRPO on the last output of each session
   and broadcasts it to all its outputs: sub-agents take their episode's advantage
   (docs/ARCHITECTURE.md §5, multi-trajectory credit). Off (the default, the release's): only
   the main row is trained.

Row = trajectory: ``prompt_ids`` = ids[:prompt_len], ``response_ids`` = the rest,
``response_mask`` = our loss mask after prompt_len (tool responses, scaffolding and the forced
think prefix are 0), ``response_logprobs`` = the sampling logprobs (0 where the mask is 0).
"""

from __future__ import annotations

import functools
import time
import uuid
from dataclasses import replace
from typing import Any

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)

from paravt.agent import (
    EpisodeInput,
    EpisodeResult,
    EpisodeSettings,
    Trajectory,
    episode_reward,
    run_episode,
)
from paravt.agent.backend import open_tools
from paravt.agent.inputs import from_extra_info
from paravt.config import RLConfig, RolloutConfig, TrainConfig, load
from paravt.integrations.verl.generator import (
    MM_PROCESSOR_KWARGS,
    VerlServerGenerator,
    verl_multi_modal_data,
)
from paravt.integrations.verl.render import AGENT_NAME
from paravt.models.chat import ChatCodec
from paravt.models.openai.judge import judge_overrides
from paravt.rewards import RewardBreakdown, RewardWeights
from paravt.rl.advantages import scale_and_clip
from paravt.rl.gating import overview_budget


@functools.lru_cache(maxsize=8)
def _load_config(path: str | None) -> TrainConfig:
    return TrainConfig() if path is None else load(path)


@functools.lru_cache(maxsize=8)
def _toolset(rollout_json: str) -> Any:
    return open_tools(RolloutConfig.model_validate_json(rollout_json))


def rollout_toolset(cfg: TrainConfig) -> Any:
    """The loop's tools, from the ONE tool builder of every engine
    (`paravt.agent.backend.open_tools`: in-process, or through ``rollout.tool_server_url`` with the
    key of ``rollout.tool_server_key_file``, a file every node reads; docs/tools.md, "Who may
    call"); one
    per worker process and rollout
    section."""
    return _toolset(cfg.rollout.model_dump_json())


def gating_epoch(global_steps: Any, steps_per_epoch: int) -> int:
    """Epoch of verl's 1-based ``global_steps`` (0 when verl does not pass it)."""
    try:
        step = int(global_steps)
    except (TypeError, ValueError):
        return 0
    return max(0, step - 1) // max(1, steps_per_epoch)


def trajectory_output(
    traj: Trajectory,
    *,
    reward: RewardBreakdown | None,
    n_frames: int,
    latency_s: float,
    score: float | None = None,
) -> AgentLoopOutput:
    """One verl row of a trajectory (reward only on the main one; ``score``: its
    ``reward_score``, default the reward itself)."""
    p = traj.prompt_len
    mm = verl_multi_modal_data(traj.videos, traj.images)
    extra: dict[str, Any] = {
        "turn_scores": [],
        "tool_rewards": [],
        "paravt_role": traj.role,
        "paravt_index": traj.index,
        "paravt_nframes": n_frames,
        "paravt_end_reason": traj.end_reason,
    }
    if reward is not None:
        extra["reward_extra_info"] = reward.scalars()
    return AgentLoopOutput(
        prompt_ids=list(traj.ids[:p]),
        response_ids=list(traj.ids[p:]),
        response_mask=list(traj.loss_mask[p:]),
        response_logprobs=list(traj.logprobs[p:]),
        multi_modal_data=mm or None,
        mm_processor_kwargs=dict(MM_PROCESSOR_KWARGS) if traj.videos else None,
        reward_score=None if reward is None else float(reward.reward if score is None else score),
        num_turns=2 * max(1, len(traj.turns)) + 1,
        metrics=AgentLoopMetrics(generate_sequences=latency_s),
        extra_fields=extra,
    )


def episode_outputs(
    result: EpisodeResult,
    reward: RewardBreakdown,
    *,
    train_subagents: bool,
    score: float | None = None,
) -> list[AgentLoopOutput]:
    """Sub-agent rows in call order (``train_subagents`` only), then the main row (LAST: verl
    reads the reward from it; ``score`` its ``reward_score``, default the reward)."""
    n = result.input.nframes
    subs = [
        trajectory_output(s, reward=None, n_frames=n, latency_s=0.0)
        for s in result.subs
        if train_subagents and s.n_sampled > 0
    ]
    main = trajectory_output(
        result.main, reward=reward, n_frames=n, latency_s=result.latency_s, score=score
    )
    return [*subs, main]


def clipped_score(reward: float, rl: RLConfig) -> float:
    """The reward as a verl row's ``reward_score``: ``rl.reward_clip`` applied to
    ``rl.reward_scale`` × reward as the local trainer does (``scale_and_clip``), then divided by
    the scale again (verl applies none)."""
    (scaled,) = scale_and_clip([reward], rl.reward_scale, rl.reward_clip)
    return scaled / rl.reward_scale


@register(AGENT_NAME)
class ParavtAgentLoop(AgentLoopBase):
    """Runs one paravt Episode per verl session (see the module docstring)."""

    def __init__(
        self, *args: Any, paravt_config: str | None = None, steps_per_epoch: int = 1, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.cfg = _load_config(paravt_config)
        self.steps_per_epoch = int(steps_per_epoch)
        self.codec = ChatCodec(self.processor)
        self.weights = RewardWeights.from_config(self.cfg.reward)
        self.tools = rollout_toolset(self.cfg)

    def _settings(self, sampling_params: dict[str, Any]) -> EpisodeSettings:
        temperature = sampling_params.get("temperature")  # verl's own: main and sub-agents
        base = EpisodeSettings.from_config(
            self.cfg,
            temperature=None if temperature is None else float(temperature),
            training=True,
        )
        top_p = float(sampling_params.get("top_p", base.sampling.top_p))
        return replace(
            base,
            sampling=replace(base.sampling, top_p=top_p),
            sub_sampling=replace(base.sub_sampling, top_p=top_p),
        )

    def episode_input(self, extra_info: dict[str, Any], global_steps: Any) -> EpisodeInput:
        epoch = gating_epoch(global_steps, self.steps_per_epoch)
        return from_extra_info(
            extra_info, overview_budget(self.cfg, epoch, str(extra_info.get("id")))
        )

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> list[AgentLoopOutput]:
        t0 = time.perf_counter()
        inp = self.episode_input(dict(kwargs["extra_info"]), kwargs.get("global_steps"))
        episode_id = f"{kwargs.get('uid', uuid.uuid4().hex[:8])}-{kwargs.get('session_id', 0)}"
        base: dict[str, Any] = {
            k: sampling_params[k] for k in ("top_k", "repetition_penalty") if k in sampling_params
        }
        generator = VerlServerGenerator(
            self.server_manager,
            self.codec,
            request_id=uuid.uuid4().hex,
            backend=str(self.rollout_config.name),
            base_params=base,
        )
        result = await run_episode(
            inp,
            generator=generator,
            codec=self.codec,
            settings=self._settings(sampling_params),
            episode_id=episode_id,
            tools=self.tools,
        )
        r = self.cfg.reward  # same reward as the local trainer: the LLM judge when configured
        (override,), _ = await judge_overrides(
            [result], url=r.judge_url, model=r.judge_model, timeout_s=r.judge_timeout_s
        )
        reward = episode_reward(result, self.weights, override)
        outputs = episode_outputs(
            result,
            reward,
            train_subagents=self.cfg.rollout.train_subagents,
            score=clipped_score(reward.reward, self.cfg.rl),
        )
        # a turn's calls share one dispatch: count each turn's latency once
        outputs[-1].metrics.tool_calls = float(
            sum({c.turn: c.latency_s for c in result.calls}.values())
        )
        outputs[-1].metrics.generate_sequences = time.perf_counter() - t0
        return outputs


__all__ = [
    "ParavtAgentLoop",
    "clipped_score",
    "episode_outputs",
    "gating_epoch",
    "trajectory_output",
]
