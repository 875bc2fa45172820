"""The sections of training: nFrames gating, the RL, SFT and prior trainers (with their optimiser
fields); the reward's is ``paravt.config.reward``, the verl engine's ``paravt.config.verl``
(``paravt.config.sections`` gathers every section)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from paravt.config.choices import (
    RL_FILTER_DOC,
    AdvNormUnit,
    KLIn,
    KLKind,
    LossAgg,
    LrDecay,
    RLFilter,
    frame_budgets_problem,
)
from paravt.config.fields import _adam_betas, _Beta, _micro_batch_tokens, _Strict, _weight_decay
from paravt.config.limits import _Steps


class GatingConfig(_Strict):
    enabled: bool = Field(
        True, description="nFrames Gating: per-prompt overview budget drawn from `choices` [paper]."
    )
    choices: list[int] = Field(
        default_factory=lambda: [4, 8, 16, 32, 64],
        description="Overview frame budgets [paper], each in 1..768 (the one rule: "
        "paravt.config.choices.frame_budgets_problem).",
    )

    @field_validator("choices")
    @classmethod
    def _in_range(cls, choices: list[int]) -> list[int]:
        if problem := frame_budgets_problem(choices):
            raise ValueError(problem)
        return choices


class RLConfig(_Strict):
    """PARA-GRPO (docs/ARCHITECTURE.md §5)."""

    engine: Literal["local", "verl"] = Field(
        "local",
        description="Where `paravt train rl` runs: local = this process (paravt.rl.loop); verl = "
        "write verl's run files and start verl (the `verl:` section, "
        "docs/scale.md).",
    )
    group_size: int = Field(8, ge=2, description="G rollouts per prompt [paper].")
    prompts_per_step: int = Field(
        4, ge=1, description="Prompts kept per step (after online filtering)."
    )
    filter: RLFilter = Field("offline", description=RL_FILTER_DOC)
    oversample: float = Field(
        1.0,
        ge=1.0,
        description="rl.filter online: roll out ceil(oversample * prompts_per_step) prompts, keep "
        "the top by reward std.",
    )
    drop_zero_variance: bool = Field(True, description="Online filter: drop equal-reward groups.")
    std_normalize: bool = Field(
        True,
        description="Divide group-centred rewards by the group std (False: PyVision-RL / Dr.GRPO).",
    )
    reward_scale: float = Field(
        10.0,
        ge=1e-3,
        le=1e3,
        description="Rewards are multiplied by this before the group normalisation [authors: "
        "reward_scaling 10]; a no-op for the advantages when std_normalize is on. In 1e-3..1e3: "
        "the default rewards span about 3, so with neither normalisation |advantage| stays "
        "near 3e3, inside the loss range the divergence check allows (paravt.rl.health); below "
        "1e-3 the group std's eps of 1e-6 starts to eat the signal.",
    )
    reward_clip: float | None = Field(
        20.0,
        gt=0,
        description="Clip reward_scale * (reward + bias) to [-reward_clip, +reward_clip] before "
        "the group normalisation [authors: AReaL's reward_clip default 20, not overridden by the "
        "recipe]: with scale 10 every reward >= 2.2 (bias -0.2 included) counts the same; None = "
        "no clip.",
    )
    adv_norm: Literal["none", "batch"] = Field(
        "batch",
        description="After the group normalisation: batch = centre and scale the step's "
        "advantages by their batch mean and std [authors: adv_norm batch]; none = keep them.",
    )
    adv_norm_unit: AdvNormUnit = Field(
        "token",
        description="rl.adv_norm batch: the mean and std are taken over every trained (loss-mask "
        "1) token of the step, so long rollouts weigh more and the KL returns are included "
        "[authors: adv_norm over the loss mask]; episode = over the kept episodes' advantages, "
        "one value each, before any KL return is added.",
    )
    clip_eps: float = Field(0.2, gt=0, description="PPO clip epsilon [paper].")
    kl_coef: float = Field(
        0.01, ge=0, description="KL coefficient to the reference policy [paper]."
    )
    kl_estimator: KLKind = Field(
        "k1",
        description="Per-token estimator of KL(policy || reference): k1 = the log ratio [authors: "
        "AReaL's default, not set by the recipe]; k3 = exp(-d) + d - 1, unbiased and never "
        "negative (verl's low_var_kl).",
    )
    kl_in: KLIn = Field(
        "reward",
        description="Where the KL acts [authors]: reward = -kl_coef * estimate (the policy's "
        "logprob at the update's start, recomputed by the trainer, vs the reference's; clamped "
        "to +-10) is a per-token reward whose return-to-go (sum over "
        "the trajectory's later trained tokens, itself included; not differentiated) is added to "
        "each token's advantage; loss = kl_coef * token-mean estimate is a term of the loss "
        "(verl's use_kl_loss; with k3, the earlier default). A verl run supports loss only.",
    )
    lr: float = Field(2e-6, gt=0, le=1e-2, description="Learning rate [paper]; at most 1e-2.")
    weight_decay: float = _weight_decay(0.01)  # [authors] actor.optimizer.weight_decay
    adam_betas: tuple[_Beta, _Beta] = _adam_betas()
    max_grad_norm: float = Field(
        1.0,
        gt=0,
        description="Clip the gradient's global L2 norm to this before each optimiser step.",
    )
    steps: _Steps = Field(
        30, ge=1, description="RL steps; each rolls out its prompts' groups and updates the policy."
    )
    ppo_epochs: int = Field(
        1,
        ge=1,
        description="Optimiser passes over one step's rollouts; > 1 lets the ratio leave 1, so "
        "the clip can act.",
    )
    seed: int = Field(
        0,
        description="Seed of the run: prompt order, gating draws and each step's sampling "
        "(reseeded from (seed, step), so a resumed run matches).",
    )
    gating: GatingConfig = Field(
        default_factory=GatingConfig,
        description="nFrames Gating: the per-prompt overview frame budget [paper].",
    )
    save_every: int = Field(
        10,
        ge=1,
        description="Checkpoint every N steps (the final model is saved at the end in any case).",
    )
    logprob_mismatch_warn: float = Field(
        0.05, ge=0, description="Warn when mean |recomputed - sampled| old logprob exceeds this."
    )
    micro_batch_tokens: int = _micro_batch_tokens()
    log_rollouts: int = Field(
        4,
        ge=0,
        description="Rollouts per step written raw to rollouts.jsonl (seeded draw; plus the "
        "first <tool_code> reversion and unclosed tag of the step).",
    )


class _SupervisedConfig(_Strict):
    """The fields the two supervised trainers share (``sft`` and ``prior``: the same
    ``SFTTrainer``);
    each section keeps its own YAML keys and values."""

    lr: float = Field(
        1e-3, gt=0, le=0.1, description="Peak learning rate (AdamW) after the warm-up; at most 0.1."
    )
    weight_decay: float = _weight_decay()
    adam_betas: tuple[_Beta, _Beta] = _adam_betas()
    batch_size: int = Field(
        8,
        ge=1,
        description="Examples per optimiser step (drawn from a seeded permutation per epoch).",
    )
    max_grad_norm: float = Field(
        1.0,
        gt=0,
        description="Clip the gradient's global L2 norm to this before each optimiser step.",
    )
    warmup_steps: int = Field(
        10, ge=0, description="Steps of linear learning-rate warm-up from lr / warmup_steps to lr."
    )
    seed: int = Field(
        0,
        description="Seed of the batch order (a function of (seed, epoch)), of the torch RNG and "
        "(sft) of the draws of the replayed traces, of the sub-agent rows trained "
        "(sft.subagent_rows) and of the direct traces moved (sft.tool_prompt_direct).",
    )
    save_every: int = Field(
        100,
        ge=1,
        description="Checkpoint every N steps (the final model is saved at the end in any case).",
    )
    micro_batch_tokens: int = _micro_batch_tokens()
    loss_agg: LossAgg = Field(
        "token-mean",
        description="The batch's loss: token-mean (every loss token weighs the same: a long row "
        "weighs more) or seq-mean-token-mean (each row's token-mean, then the mean over rows).",
    )


class SFTConfig(_SupervisedConfig):
    """Supervised cold start (``paravt train sft``) on distilled or oracle traces."""

    epochs: _Steps = Field(
        1,
        ge=1,
        description="Passes over the SFT pool; steps = ceil(examples / batch_size) × epochs, "
        "capped by max_steps (examples: the SFT traces and any replayed habit traces).",
    )
    max_steps: _Steps | None = Field(
        None, ge=1, description="Stop after this many steps (None: all the epochs)."
    )
    subagent_rows: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Share of the data's sub-agent rows (kind=sub: a window's frames -> its "
        "summary) SFT trains beside the main agent's traces, drawn by sft.seed. 0: none, as the "
        "paper's SFT sources and the release's manifest (docs/fidelity.md row 69); 1: all.",
    )
    mask_think_prefix: bool = Field(
        False,
        description="Put the assistant turns' leading '<think>\\n' into the prompt (mask 0) "
        "instead of training it. Off: SFT teaches the whole format and the "
        "think prefix stays an RL-time constraint [paper].",
    )
    prior_replay: float = Field(
        0.0,
        ge=0.0,
        lt=1.0,
        description="Share of the SFT pool that is the simulated base's own habit traces "
        "(the prior section's habits, on the prompts of replay_data): the pull of a pretraining "
        "far larger than SFT, which a tiny base lacks (its habits die within 25 SFT steps "
        "without it; docs/repro.md). 0: SFT traces only.",
    )
    tool_prompt_direct: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Share of the data's direct traces (main rows of mode none: think, then "
        "answer, no call) trained under the tool system prompt instead of the reasoning one "
        "(paravt.rl.direct): a direct-answer mode under the prompt RL samples with, which a "
        "pretrained LMM brings and a tiny base does not (docs/repro.md). 0: as written.",
    )
    replay_data: str | None = Field(
        None,
        description="The parquet whose prompt rows (kind rl) give the replayed habit traces: "
        "the base's base.parquet (its videos beside it). Needed when prior_replay > 0.",
    )

    @model_validator(mode="after")
    def _replay(self) -> SFTConfig:
        if self.prior_replay > 0 and not self.replay_data:
            raise ValueError(
                f"sft.prior_replay={self.prior_replay} replays the base's habit traces: set "
                "sft.replay_data to the base's base.parquet (its prompt rows)"
            )
        return self


def report_replay_rows(batch_size: int, share: float) -> int:
    """The rows of a report-stage batch of ``batch_size`` drawn from the mixture (``share``:
    ``prior.report_replay``)."""
    return round(batch_size * share)


class PriorConfig(_SupervisedConfig):
    """The simulated pretrained tool prior (``paravt train prior``, paravt/data/synth/prior.py): SFT
    on
    pretraining-style traces before the cold start. Strength = ``steps`` and ``tool_mix``."""

    steps: _Steps = Field(
        200, ge=1, description="Optimisation steps of the simulated pretraining (prior strength)."
    )
    copy_steps: _Steps = Field(
        0,
        ge=0,
        description="The first steps of `steps` on text-only copy runs (data/synth/copy_runs.py: "
        "a run of the base's own words repeated after others, the loss on the repeat): the "
        "language stage in which a pretrained LM's in-context copy forms, before the alignment "
        "stage; at a constant lr after the warm-up; the stages after it run the schedule of a "
        "run of steps - copy_steps steps without it (raise steps by copy_steps to keep a base's "
        "schedule; 0: none).",
    )
    align_steps: _Steps = Field(
        0,
        ge=0,
        description="The first steps of `steps` on the perception rows alone (a window's frames "
        "-> what appears: the vision-language alignment stage an LMM's pretraining opens with), "
        "the whole mixture after them (0: the mixture from the first step).",
    )
    report_steps: _Steps = Field(
        0,
        ge=0,
        description="The last steps of `steps` on the text report drills alone (data/synth/"
        "drills.py: a tool transcript whose results name the answer -> the answer; the lookup "
        "from a tool result a pretrained LM's function-calling data teaches), at a constant lr "
        "after the warm-up; the stages before it run the schedule of a run of steps - "
        "copy_steps - report_steps steps (raise steps by report_steps to keep a base's "
        "schedule: the base without the stage, then the stage; 0: none; report_replay mixes "
        "the mixture's rows in).",
    )
    report_replay: float = Field(
        0.0,
        ge=0,
        lt=1,
        description="The share of each report-stage batch drawn from the mixture (the first rows "
        "of the batch the mixture would have next), the rest from the report drills: a replay "
        "that keeps the mixture's skills through the stage (0: the drills alone; with "
        "report_steps, and a row of each kind in a batch).",
    )
    habit_copies: int = Field(
        1,
        ge=1,
        le=16,
        description="Habit traces per prompt, each with its own filler and tool draw (the "
        "habit's share of the base's data: prior strength).",
    )
    tool_mix: float = Field(
        0.7,
        ge=0,
        le=1,
        description="Share of prompts whose trace has the <tool_code> habit: 0 = weak prior "
        "(answers only, the Qwen2.5-VL side), > 0 = strong prior (the "
        "Qwen3-VL side).",
    )
    think_sentences: int = Field(
        6, ge=1, description="Filler sentences of every think (the think habit's base length)."
    )
    think_tail: float = Field(
        0.0,
        ge=0,
        le=20,
        description="Mean of a geometric number of extra filler sentences per think (0: every "
        "think is think_sentences long): the long-think tail of a strong prior, some of whose "
        "sampled thinks run past the RL turn budget (paper §H.3).",
    )
    think_runaway: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Share of thinks that run on for 115–140 filler sentences (~370–460 "
        "tokens), past the RL turn budget: the runaway thinks of a strong prior, a share of "
        "which its sampled thinks repeat unclosed (paper §H.3).",
    )
    json_share: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Share of tool traces in the native form: <tool_call> JSON calls on every "
        "window of the crop plan in ONE turn (Qwen3-VL's own tool format); the rest use the "
        "second pretrained form, one <tool_code> python call per turn.",
    )
    python_share: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Share of the native-form tool traces whose <tool_call> blocks hold a "
        'python call, crop_video("video.mp4", start, end), as the paper\'s SFT output writes '
        "(Appendix D): a call the release's JSON reader does not run.",
    )
    max_calls: int = Field(
        2, ge=1, description="Most <tool_code> turns (one call each) in a python-form tool trace."
    )
    plain_share: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Share of prompts whose habit trace stands under the no-tool (reasoning) "
        "system prompt and calls nothing: a pretrained model does not call a tool its prompt "
        "does not offer (0: every trace keeps the prompt's own tool prompt).",
    )
    lr_decay: LrDecay = Field(
        "cosine",
        description="After the warm-up: cosine down to min_lr_ratio × lr at the last step (a "
        "pretraining schedule), or constant.",
    )
    min_lr_ratio: float = Field(
        0.1, ge=0, le=1, description="The cosine schedule's last learning rate, as a share of lr."
    )

    @model_validator(mode="after")
    def _align(self) -> PriorConfig:
        if self.copy_steps + self.align_steps + self.report_steps >= self.steps:
            raise ValueError(
                f"prior.copy_steps={self.copy_steps} + prior.align_steps={self.align_steps} + "
                f"prior.report_steps={self.report_steps} leave no step of prior.steps="
                f"{self.steps} for the mixture: set their sum below steps"
            )
        replay = report_replay_rows(self.batch_size, self.report_replay)
        if self.report_replay and not (self.report_steps and 0 < replay < self.batch_size):
            raise ValueError(
                f"prior.report_replay={self.report_replay} of a batch of {self.batch_size} is "
                f"{replay} mixture rows with prior.report_steps={self.report_steps}: it needs "
                "report steps and leaves a row of each kind in a batch (or set it to 0)"
            )
        return self
