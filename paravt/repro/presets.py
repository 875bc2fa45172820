"""The presets of `paravt repro` (sizes, steps, the shared simulated base) and the config every
stage of a run starts from (``base_config``, then the run's ``--set`` overrides)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from paravt.config import LossAgg, TrainConfig


@dataclass(frozen=True)
class BaseSpec:
    """The simulated pretrained base (``repro.bases``): one per model size, shared by the presets
    (so `make demo`, `paravt repro --quick` and the science run build it once)."""

    videos: int  # its own TRAIN videos (ParaVT-Synth seed 0: the runs' first train videos)
    probe_videos: int  # held-out videos of its probe (the eval stream: never trained on)
    steps: int  # pretraining steps (strength of the whole base, perception and habit)
    lr: float  # the pretraining learning rate (SFT fine-tunes below it)
    tool_mix: float  # the strong prior's share of <tool_code> habit traces; the weak prior is 0
    think_sentences: int  # ~35 tokens each: a prior tool turn must fit in max_new_tokens, or
    # sampling never reaches the <tool_code> it learnt (measured: 6 sentences = 170–205 tokens)
    save_every: int  # checkpoints: a killed base build resumes
    habit_copies: int = (
        1  # habit traces per prompt (prior.habit_copies): the habit's share of the base's data
    )
    align_steps: int = 0  # prior.align_steps: the first of `steps`, on the perception clips alone
    # prior.report_steps: the last of `steps`, on the text report drills alone (the strong prior's
    # base only: its drills are its native tool transcripts; repro.training.prior_config)
    report_steps: int = 0
    # the strong prior's tool-native habits (prior.think_tail, prior.json_share); the weak prior
    # has neither (no tool form, every think think_sentences long): repro.training.pretrained_base
    think_tail: float = 0.0
    json_share: float = 0.0
    think_runaway: float = 0.0  # prior.think_runaway: the share of thinks that run on
    python_share: float = 0.0  # prior.python_share: python bodies in the native <tool_call> form
    loss_agg: LossAgg = "token-mean"  # prior.loss_agg: how the base's batch loss weighs its rows


@dataclass(frozen=True)
class ReproPreset:
    train_videos: int
    rl_videos: int  # the RL prompts' own videos (3 prompts each): rl_steps × prompts_per_step × 1.5
    # with a margin, so the offline filter's pool is only as large as the run needs
    eval_videos: int  # 3 questions each
    model_size: str
    base: BaseSpec
    sft_steps: int
    sft_save_every: int  # the selection's candidates
    sft_lr: float  # a fine-tune: below base.lr (the paper: pretraining ≫ SFT)
    sft_replay: float  # sft.prior_replay: the base's habit traces' share of the SFT pool
    sft_subagent_rows: float  # sft.subagent_rows: the data's sub-agent rows SFT trains (a share)
    rl_steps: int
    group_size: int
    prompts_per_step: int
    rl_lr: float  # RL knobs: set ONCE for every variant and seed (docs/repro.md, "RL knobs")
    ppo_epochs: int  # > 1: the ratio leaves 1 after the first pass, so the clip can act
    max_new_tokens: int
    sub_max_new_tokens: int
    probe_prompts: int  # prompts of a τ = 0.7 format probe
    probe_k: int  # rollouts per prompt
    select_tolerance: float
    eval_ns: tuple[int, ...]  # every variant, parallel mode
    grid_ns: tuple[int, ...]  # sft / vanilla_grpo / paragrpo, every mode
    # model.replicas of the eval and the RL rollouts (2: both cores; paravt.models.hf.replicas)
    replicas: int = 1
    # the RL init's reward-by-path probe (issue 47 M3): G rollouts for each of the first N RL
    # prompts, per (variant, budget); 25 × 8 = 200 rollouts a cell
    path_prompts: int = 25
    path_budgets: tuple[int, ...] = (4, 64)
    needle_kinds: tuple[str, ...] = (
        "flash",
    )  # the base's and the runs' needles: the one kind the s model
    # learns to see in minutes (docs/repro.md, "The simulated pretrained base": digits and shapes
    # did not)
    durations: tuple[int, int] = (
        60,
        150,
    )  # video lengths (s) of the base's and the runs' ParaVT-Synth: K = 2–4
    # windows of ≤ 40 s per parallel call turn (the paper averages 2.5 calls; 60–300 s gave 2–8,
    # docs/repro.md)


# docs/repro.md, "The simulated pretrained base": why these numbers
_BASE_S = BaseSpec(
    videos=400,
    probe_videos=40,
    # 2,400 until 2026-12-06: its checkpoints' probe (docs/repro-log.md) shows every check that
    # holds at 2,400 holding by 1,200 (open question at 64: 0.35 at 800, 1.00 at 1,200) and the two
    # that fail at 2,400 (MCQ at 64, stated time) failing at every checkpoint; then 1,400 with
    # an alignment stage of 400: the clips alone first (0.08 s a step against the mixture's 0.18),
    # the mixture's 1,000 after. In the mixture alone a build missed a colour whole by chance (1 of
    # 3 seeds, 2 of 3 with tool_mix 0.8); with the stage every build saw every colour, 6 of 6
    # (docs/repro-log.md, 2026-12-06 i). Then 1,525: a report stage of 125 steps after those
    # 1,400 (the same schedule), the length whose base reads its swapped tool report best over 3
    # base seeds: 68 of 90 open questions (0.76) against 13 without it and 39 / 52 / 65 at 60 / 90 /
    # 175 steps, the overview's open question at 64 kept (117 of 120) and the think overrun in
    # band on all three (at 175 not: 0.65 on seed 2) (docs/repro-log.md, 2026-12-07 o and p)
    steps=1525,
    align_steps=400,
    report_steps=125,
    lr=1e-3,
    tool_mix=1.0,
    think_sentences=2,
    save_every=100,
    habit_copies=2,
    think_tail=6.0,  # short thinks of 2 + 6 sentences on average (~30 tokens)
    # a fifth of the thinks run on past the 384-token budget: without them the base's sampled
    # thinks never reach it (2026-12-06: 98 of 98 closed, longest 252 tokens; the tail alone
    # cannot: a filler sentence is ~3.5 tokens, so 384 tokens are ~110 sentences)
    think_runaway=0.2,
    json_share=0.8,  # the native <tool_call> tag in 4 of 5 tool traces, <tool_code> in the rest
    # python bodies in 3 of 4 native-form traces, JSON in the rest: the paper's SFT output writes
    # python calls inside <tool_call> (Appendix D), which the release does not run; without them
    # this base's calls broke in 6-7 % of the RL init's call rollouts against 17-21 % for direct
    # answers (2026-12-06, base seeds 0 and 1), the reverse of the paper's Format Fragility
    python_share=0.75,
    # each row's token-mean, then the mean over rows: under the token-mean the runaway thinks'
    # ~400 filler tokens were ~60 % of the loss tokens and the base missed perception on 7 of 9
    # builds (clip recall 0.45-0.85); without runaway thinks 3 of 3 saw, and so did the row mean
    # WITH them, keeping the overrun in band (2026-12-06 b, docs/repro-log.md)
    loss_agg="seq-mean-token-mean",
)
_DEMO = ReproPreset(
    train_videos=120,
    rl_videos=8,  # 24 prompts: 12 steps × 1 prompt × 1.5 = 18, with a margin
    eval_videos=16,
    model_size="s",
    base=_BASE_S,
    sft_steps=150,
    sft_save_every=25,
    # the format schema on a tool-native base, 5× below its lr (paper: SFT ≪ pretraining; issue 39)
    sft_lr=2e-4,
    sft_replay=0.0,
    # a tenth of the data's sub-agent rows (the base's clip form), the smallest share measured whose
    # cold-start sub-agents stay clean on 3 base seeds (subagent_clean: 1.00 each; none: 1.00 /
    # 0.88 / 0.63; 0.05: 1.00 / 1.00 / 0.89); the paper's SFT trains none (docs/fidelity.md
    # rows 69-70, docs/repro-log.md 2026-12-06 g)
    sft_subagent_rows=0.1,
    rl_steps=12,
    group_size=8,  # G [paper, authors]
    prompts_per_step=1,  # 8 rollouts a step: the 3-seed demo within its 25 minutes (G stays 8)
    rl_lr=1e-4,
    ppo_epochs=1,  # one PPO minibatch, one pass [authors]
    max_new_tokens=384,
    sub_max_new_tokens=48,
    probe_prompts=24,
    probe_k=2,
    select_tolerance=0.05,
    eval_ns=(4, 64),
    grid_ns=(4, 16, 64),
    replicas=2,
)

PRESETS = {
    # the test suite's: every stage runs, numbers are noise
    "micro": ReproPreset(
        train_videos=2,
        rl_videos=1,
        eval_videos=1,
        model_size="xs",
        base=BaseSpec(
            videos=2,
            probe_videos=1,
            steps=2,
            lr=1e-3,
            tool_mix=1.0,
            think_sentences=1,
            save_every=10_000,
        ),
        sft_steps=2,
        sft_save_every=1,
        sft_lr=3e-4,
        sft_replay=0.0,
        sft_subagent_rows=0.0,
        rl_steps=1,
        group_size=2,
        prompts_per_step=1,
        rl_lr=1e-4,
        ppo_epochs=2,
        max_new_tokens=16,
        sub_max_new_tokens=8,
        probe_prompts=2,
        probe_k=1,
        select_tolerance=0.05,
        eval_ns=(4, 64),
        grid_ns=(4, 64),
        path_prompts=1,
    ),
    # `make demo` (sft, vanilla_grpo, paragrpo)
    "demo": _DEMO,
    # the science run of docs/repro.md (every variant × seeds); the same base as demo and quick
    # 102 held-out questions per n; 102 RL prompts: 30 steps × 2 × 1.5 = 90, with a margin
    "science": replace(_DEMO, rl_steps=30, eval_videos=34, rl_videos=34, prompts_per_step=2),
    # every variant in one short run: a pipeline check, too short for the science
    "quick": replace(
        _DEMO,
        train_videos=60,
        rl_videos=6,  # 18 prompts: 8 steps × 1 × 1.5 = 12, with a margin
        eval_videos=8,
        sft_steps=100,
        rl_steps=8,
        prompts_per_step=1,
        probe_prompts=8,
        grid_ns=(4, 64),
    ),
    "full": replace(
        _DEMO,
        train_videos=200,
        rl_videos=140,  # 420 prompts: 60 steps × 4 × 1.5 = 360, with a margin
        eval_videos=70,
        sft_steps=300,
        sft_save_every=50,
        rl_steps=60,
        group_size=8,
        prompts_per_step=4,
        probe_prompts=32,
        probe_k=8,
        grid_ns=(4, 8, 16, 32, 64),
    ),
}


def base_config(out: Path, p: ReproPreset) -> TrainConfig:
    cfg = TrainConfig()
    cfg.video.overview_max_pixels = cfg.video.crop_max_pixels = 64 * 64
    cfg.sampling.max_new_tokens, cfg.sampling.sub_max_new_tokens = (
        p.max_new_tokens,
        p.sub_max_new_tokens,
    )
    cfg.rollout.max_context_tokens = 4096
    b = p.base
    cfg.prior.steps, cfg.prior.tool_mix, cfg.prior.save_every, cfg.prior.lr = (
        b.steps,
        b.tool_mix,
        b.save_every,
        b.lr,
    )
    cfg.prior.think_sentences, cfg.prior.habit_copies = b.think_sentences, b.habit_copies
    cfg.prior.think_tail, cfg.prior.json_share = b.think_tail, b.json_share
    cfg.prior.think_runaway, cfg.prior.python_share = b.think_runaway, b.python_share
    cfg.prior.loss_agg, cfg.prior.align_steps = b.loss_agg, b.align_steps
    cfg.prior.report_steps = b.report_steps
    cfg.prior.batch_size = cfg.sft.batch_size = 2 if p.model_size == "xs" else 8
    cfg.sft.max_steps, cfg.sft.epochs, cfg.sft.save_every = p.sft_steps, 1000, p.sft_save_every
    cfg.sft.lr = p.sft_lr
    cfg.sft.replay_data = str(out / "synth" / "base.parquet")  # the base's first prompts
    cfg.sft.prior_replay = p.sft_replay  # after replay_data: the config checks the pair
    cfg.sft.subagent_rows = p.sft_subagent_rows
    cfg.rl.steps, cfg.rl.group_size, cfg.rl.prompts_per_step = (
        p.rl_steps,
        p.group_size,
        p.prompts_per_step,
    )
    cfg.rl.lr, cfg.rl.ppo_epochs, cfg.rl.save_every, cfg.rl.oversample = (
        p.rl_lr,
        p.ppo_epochs,
        10_000,
        1.5,
    )
    cfg.eval.workers = 8  # episodes in flight: their generate calls meet in shared batches
    cfg.model.replicas = p.replicas
    cfg.data = str(out / "synth" / "rl.parquet")
    cfg.logging.group = out.resolve().name  # the trackers group this run's variants and seeds
    # one MLflow store for every stage, eval and the summary: its UI shows the variants side by side
    cfg.logging.mlflow_tracking_uri = f"sqlite:///{out.resolve() / 'mlruns' / 'mlflow.db'}"
    return cfg


def with_config_overrides(cfg: TrainConfig, overrides: Sequence[str]) -> TrainConfig:
    """``cfg`` with ``--set a.b=value`` strings applied, validated (the config's own checks, e.g.
    replicas only on a CPU); ``cfg`` itself when there are none."""
    from paravt.config.loading import resolve

    if not overrides:
        return cfg
    return resolve(TrainConfig, cfg.model_dump(mode="json"), "paravt repro --set", overrides)
