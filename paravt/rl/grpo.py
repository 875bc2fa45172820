"""PARA-GRPO in one process (CPU or one GPU): the reference implementation
(docs/ARCHITECTURE.md §5).

One step, top to bottom:

1. take ``prompts_per_step`` prompts from a seeded per-epoch permutation (``rl.filter`` online:
   ``ceil(oversample · prompts_per_step)``; ``paravt.rl.cursor``);
2. nFrames Gating: each prompt gets n ~ U(choices) keyed by (seed, epoch, prompt id), the same n
   for its G rollouts (off: ``video.overview_nframes``);
3. roll out G episodes per prompt (``paravt.agent.run_group``, all concurrently, so the batching
   generator serves them together);
4. reward each episode (``paravt.rewards``), bias included;
5. ``rl.filter`` offline [paper] (the DAPO pre-filter ran once before training): every group is
   trained; online: drop zero-variance groups, keep the ``prompts_per_step`` groups with the
   largest reward std (PyVision-RL's oversample–filter–rank). Groups with a backend failure or a
   crashed episode are dropped in both (``paravt.rl.filters.filter_groups``);
6. group advantages of the scaled, clipped rewards (with or without std normalisation; batch
   normalised over episodes when ``rl.adv_norm_unit`` is episode), broadcast to the episode's
   sub-agent trajectories when ``rollout.train_subagents`` (off by default, as the release: only
   the main trajectories are trained);
7. PPO-clip update (``paravt.rl.update``): the KL to the frozen reference as a per-token reward
   (``rl.kl_in`` reward) or a loss term, the per-token advantages batch normalised over the
   trained tokens (``rl.adv_norm_unit`` token);
8. log every metric, checkpoint every ``save_every`` steps (atomic; resume is bit-for-bit).

Every ablation of the paper is one flag: vanilla GRPO = ``reward.anchor=false``,
``rollout.think_prefix=false``, ``rl.gating.enabled=false``; ``reward.tool_mode=off`` (− tool
reward); ``reward.gamma=0`` (− γ penalty).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from paravt.agent import EpisodeInput, EpisodeResult, EpisodeSettings, episode_reward, run_group
from paravt.agent.inputs import load_episode_inputs
from paravt.config import TrainConfig
from paravt.errors import DataError
from paravt.models.openai.judge import judge_overrides
from paravt.rewards import RewardBreakdown, RewardWeights
from paravt.rewards.metrics import RolloutRecord, aggregate
from paravt.rl.advantages import (
    batch_normalize,
    broadcast_to_trajectories,
    grouped,
    scale_and_clip,
)
from paravt.rl.cursor import DataCursor, rollout_prompts
from paravt.rl.filters import filter_groups
from paravt.rl.gating import overview_budget
from paravt.rl.loss import ClipKL
from paravt.rl.mfu import Mfu
from paravt.rl.rollouts import RolloutLog, sample_rows
from paravt.rl.session import PolicySession
from paravt.rl.sft import require_rows, screen_data
from paravt.rl.step_stats import (
    PhaseTimer,
    prompt_length,
    response_length,
    reward_stats,
    tool_seconds,
)
from paravt.rl.trainer import TrainerSettings
from paravt.rl.update import TrainItem, UpdatePasses, UpdateStats, ppo_update

log = logging.getLogger(__name__)


@dataclass
class StepOutput:
    metrics: dict[str, float]
    results: list[EpisodeResult] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(
        default_factory=list
    )  # this step's rows of rollouts.jsonl


#: The fix when an RL data file holds no prompt (the one text: `check_data` and the constructor).
NO_PROMPTS_FIX = (
    "point `data` at a ParaVT-Synth rl.parquet (`paravt data synth`); an sft.parquet holds "
    "traces, for `paravt train sft`"
)


class GRPOTrainer:
    """PARA-GRPO (``paravt.rl.trainer.Trainer``): owns the policy, the reference, the optimizer
    and the data cursor."""

    def __init__(
        self, cfg: TrainConfig, prompts: list[EpisodeInput], session: PolicySession
    ) -> None:
        if not prompts:  # `check_data` refuses such a file before the model loads
            raise DataError(f"{cfg.data} holds no RL prompts (rows of kind rl); {NO_PROMPTS_FIX}")
        self.cfg, self.prompts, self.s = cfg, prompts, session
        self.cursor = DataCursor()
        self.weights = RewardWeights.from_config(cfg.reward)
        self.settings = EpisodeSettings.from_config(cfg, training=True)
        self.total_steps = cfg.rl.steps
        self.rollout_log = RolloutLog(cfg.out_dir)
        self._rollouts: list[dict[str, Any]] = []  # the last step's sample (rollouts())
        self._ref_timer = PhaseTimer(session.ref_model)  # timing_s/ref
        self._mfu = Mfu.of(session.model)  # perf/mfu/actor

    @classmethod
    def trainer_settings(cls, cfg: TrainConfig) -> TrainerSettings:
        return TrainerSettings(
            optim=cfg.rl,
            seed=cfg.rl.seed,
            save_every=cfg.rl.save_every,
            generate=True,
            reference=cfg.rl.kl_coef > 0,
        )

    @classmethod
    def check_data(cls, cfg: TrainConfig) -> None:
        require_rows(cfg.data, ("rl",), "RL prompts", NO_PROMPTS_FIX)
        screen_data(cfg, ("rl",))

    @classmethod
    def build(cls, cfg: TrainConfig, session: PolicySession) -> GRPOTrainer:
        root = Path(cfg.data_root) if cfg.data_root else None
        prompts = load_episode_inputs(
            Path(cfg.data), root, max_row_bytes=cfg.max_row_bytes, warn=False
        )
        return cls(cfg, prompts, session)

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.cursor.epoch, "position": self.cursor.position}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.cursor.epoch, self.cursor.position = int(state["epoch"]), int(state["position"])
        self.rollout_log.truncate_after(int(state.get("step", 0)))  # those steps run again

    def describe(self, m: Mapping[str, float]) -> str:
        return (
            f"R={m.get('critic/rewards/mean', 0):+.2f} acc={m.get('acc', 0):.2f} "
            f"f_tau={m.get('f_tau', 0):.2f} kappa={m.get('kappa', 0):.2f}"
        )

    # -- one step ------------------------------------------------------------------------------
    def step(self, step: int) -> dict[str, float]:
        if step == 0:
            self.rollout_log.start_fresh()
        out = self.run_step(step)
        self.rollout_log.append(out.samples)
        self._rollouts = out.samples
        return out.metrics

    def rollouts(self) -> list[dict[str, Any]]:
        return self._rollouts

    def run_step(self, step: int) -> StepOutput:
        """One step, with its episodes (tests and benchmarks read them)."""
        rl = self.cfg.rl
        t0 = time.perf_counter()
        picks = self.cursor.take(len(self.prompts), rollout_prompts(rl), rl.seed)
        inputs, groups = self._expand(picks)
        results, overrides, judge_counts = asyncio.run(self._rollout(inputs, step))
        t1 = time.perf_counter()
        rewards = [
            episode_reward(r, self.weights, o) for r, o in zip(results, overrides, strict=True)
        ]
        t2 = time.perf_counter()
        kept, drop_counts = filter_groups(rl, groups, [b.reward for b in rewards], results)
        items, episode_adv = self._items(results, rewards, groups, kept)
        t_adv = time.perf_counter()
        self._ref_timer.take()
        stats = self._update(items, step)
        t3 = time.perf_counter()
        ref_s = self._ref_timer.take()
        update_s = t3 - t_adv - ref_s - stats.old_logprob_s
        records = [rollout_record(r, b) for r, b in zip(results, rewards, strict=True)]
        summary = aggregate(records)
        summary.pop("reward/mean", None)  # critic/rewards/mean (verl's name), below
        metrics = {
            **summary,
            **stats.to_metrics(),
            **drop_counts,
            **judge_counts,
            "groups/kept": float(len(kept)),
            "actor/lr": self.s.optimizer.param_groups[0]["lr"],
            "actor/kl_coef": rl.kl_coef,
            "training/epoch": float(picks[-1][1]) if picks else float(self.cursor.epoch),
            "tokens/input_per_rollout": _mean([r.tokens.total_input for r in results]),
            "tokens/generated_per_rollout": _mean([r.tokens.generated for r in results]),
            **response_length(results),
            **prompt_length(results),
            **reward_stats([b.reward for b in rewards], groups, list(episode_adv.values())),
            "timing_s/gen": t1 - t0,
            "timing_s/reward": t2 - t1,
            "timing_s/adv": t_adv - t2,
            "timing_s/old_log_prob": stats.old_logprob_s,  # the KL reward's (paravt.rl.update)
            "timing_s/ref": ref_s,
            "timing_s/update_actor": update_s,
            "timing_s/tools": tool_seconds(results),
            **self._actor_mfu(items, update_s),
            "perf/total_num_tokens": float(
                sum(r.tokens.total_input + r.tokens.generated for r in results)
            ),
        }
        samples = self._samples(step, results, rewards, groups, episode_adv)
        return StepOutput(metrics, results, samples)

    def _actor_mfu(self, items: list[TrainItem], update_s: float) -> dict[str, float]:
        """``perf/mfu/actor``: the update's rows (those with a sampled token) over its time."""
        return self._mfu.metrics(
            "perf/mfu/actor",
            [len(it.traj.ids) for it in items if it.traj.n_sampled > 0],
            update_s,
            passes=self.cfg.rl.ppo_epochs,
        )

    def _samples(
        self,
        step: int,
        results: list[EpisodeResult],
        rewards: list[RewardBreakdown],
        groups: dict[str, list[int]],
        episode_adv: dict[int, float],
    ) -> list[dict[str, Any]]:
        """This step's rows of ``rollouts.jsonl`` (``rl.log_rollouts`` of them, seeded by the
        step)."""
        rl = self.cfg.rl
        group_of = [g for g, idx in sorted(groups.items(), key=lambda kv: kv[1][0]) for _ in idx]
        return sample_rows(
            step + 1,
            results,
            rewards,
            group_of,
            episode_adv,
            n=rl.log_rollouts,
            seed=step_seed(rl.seed, step),
        )

    def _update(self, items: list[TrainItem], step: int) -> UpdateStats:
        """The policy update on the kept rollouts; warns when the recomputed logprobs drift from the
        sampler's."""
        cfg, rl = self.cfg, self.cfg.rl
        stats = ppo_update(
            self.s.model,
            self.s.processor,
            self.s.optimizer,
            items,
            clip=ClipKL(
                clip_eps=rl.clip_eps, kl_coef=rl.kl_coef, kl_kind=rl.kl_estimator, kl_in=rl.kl_in
            ),
            passes=UpdatePasses(
                ppo_epochs=rl.ppo_epochs,
                max_grad_norm=rl.max_grad_norm,
                micro_batch_tokens=rl.micro_batch_tokens,
                token_norm=rl.adv_norm == "batch" and rl.adv_norm_unit == "token",
            ),
            ref_model=self.s.ref_model,
            temperature=cfg.sampling.temperature,
        )
        if stats.logprob_mismatch > rl.logprob_mismatch_warn:
            log.warning(
                "step %d: mean |recomputed − sampling| logprob %.4f > %.4f: the trainer and the "
                "sampler "
                "disagree (dtype, attention kernel or a processing mismatch)",
                step,
                stats.logprob_mismatch,
                rl.logprob_mismatch_warn,
            )
        return stats

    def _expand(
        self, picks: list[tuple[int, int]]
    ) -> tuple[list[EpisodeInput], dict[str, list[int]]]:
        """G copies of each picked prompt with its gated n; groups map a group key to indices."""
        rl = self.cfg.rl
        inputs: list[EpisodeInput] = []
        groups: dict[str, list[int]] = {}
        for k, (row, epoch) in enumerate(picks):
            base = self.prompts[row]
            n = overview_budget(self.cfg, epoch, base.id)
            key = f"{k}:{base.id}"
            groups[key] = list(range(len(inputs), len(inputs) + rl.group_size))
            inputs.extend(base.with_nframes(n) for _ in range(rl.group_size))
        return inputs, groups

    async def _rollout(
        self, inputs: list[EpisodeInput], step: int
    ) -> tuple[list[EpisodeResult], list[float | None], dict[str, float]]:
        """G rollouts of every prompt, concurrently; then the optional LLM judge on open-ended
        ones."""
        ids = [f"s{step}-e{i}" for i in range(len(inputs))]
        seed = step_seed(self.cfg.rl.seed, step)  # every request derives its own seed from this
        settings = replace(
            self.settings,
            sampling=replace(self.settings.sampling, seed=seed),
            sub_sampling=replace(self.settings.sub_sampling, seed=seed),
        )
        assert self.s.generator is not None, "an RL session is created with rollout= (a generator)"
        results = await run_group(
            inputs,
            generator=self.s.generator,
            codec=self.s.codec,
            settings=settings,
            tools=self.s.tools,
            episode_ids=ids,
        )
        r = self.cfg.reward
        overrides, counts = await judge_overrides(
            results, url=r.judge_url, model=r.judge_model, timeout_s=r.judge_timeout_s
        )
        return results, overrides, counts

    def _items(
        self,
        results: list[EpisodeResult],
        rewards: list[RewardBreakdown],
        groups: dict[str, list[int]],
        kept: list[str],
    ) -> tuple[list[TrainItem], dict[int, float]]:
        """Group advantages per episode (rewards scaled and clipped first); every trajectory of an
        episode (main, and its sub-agents when ``rollout.train_subagents``) takes its episode's.
        Also returns each kept rollout's advantage by its index (for ``rollouts.jsonl``; with
        ``rl.adv_norm_unit`` token, before the update's KL returns and token normalisation)."""
        rl = self.cfg.rl
        idx = [i for g in kept for i in groups[g]]
        adv = grouped(
            scale_and_clip([rewards[i].reward for i in idx], rl.reward_scale, rl.reward_clip),
            [g for g in kept for _ in groups[g]],
            std_normalize=rl.std_normalize,
        )
        if rl.adv_norm == "batch" and rl.adv_norm_unit == "episode":
            adv = batch_normalize(adv)
        episode_adv = {results[i].main.episode_id: a for i, a in zip(idx, adv, strict=True)}
        trajs = [
            t
            for i in idx
            for t in (
                results[i].trajectories if self.cfg.rollout.train_subagents else (results[i].main,)
            )
        ]
        per_traj = broadcast_to_trajectories(episode_adv, [t.episode_id for t in trajs])
        return [TrainItem(t, a) for t, a in zip(trajs, per_traj, strict=True)], dict(
            zip(idx, adv, strict=True)
        )


def rollout_record(r: EpisodeResult, b: RewardBreakdown) -> RolloutRecord:
    """The metrics view of one rollout. kappa counts the calls EXECUTED (``n_successful_calls``,
    as the release logs it); ``kappa_written`` the calls the model wrote. Sub-agent latency is the
    mean over the sub-agents that returned (a timed-out request has no trajectory)."""
    sub_latency = [s.turns[0].latency_s for s in r.subs if s.turns]
    return RolloutRecord(
        b,
        task=r.input.task,
        n_frames=r.input.nframes,
        subagent_latency_s=_mean(sub_latency) if sub_latency else None,
        tokens=asdict(r.tokens),
        executed_calls=r.n_successful_calls,
    )


def step_seed(seed: int, step: int) -> int:
    """The step's base seed: a fixed affine mix of (seed, step), the same in every process."""
    return (seed * 1_000_003 + step * 7919) % (2**31 - 1)


def _mean(xs: list[float] | list[int]) -> float:
    return float(sum(xs)) / len(xs) if xs else 0.0


__all__ = ["GRPOTrainer", "StepOutput", "step_seed", "rollout_record"]
