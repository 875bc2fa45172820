"""`paravt repro`: simulated tool prior → SFT cold start → measured early-checkpoint selection →
the Table 2 variants (``paravt.repro.variants``) × seeds → eval → ``DIR/summary.json``.

Resumable stage by stage like `paravt demo`: a stage that finished writes a marker and is skipped
on the next run with the same ``--out``; trainings continue from their last checkpoint and evals
by sample id. Every number in the summary is measured in the run (docs/repro.md).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from paravt.config import TrainConfig
from paravt.jsonl import write_atomic
from paravt.repro.stages import console, finish_stage, stage_times, start_stage
from paravt.repro.variants import Variant, pick, with_overrides

MODES = ("parallel", "sequential", "none")


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


@dataclass(frozen=True)
class ReproPreset:
    train_videos: int
    eval_videos: int  # 3 questions each
    model_size: str
    base: BaseSpec
    sft_steps: int
    sft_save_every: int  # the selection's candidates
    sft_lr: float  # a fine-tune: below base.lr (the paper: pretraining ≫ SFT)
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
    steps=2400,
    lr=1e-3,
    tool_mix=1.0,
    think_sentences=2,
    save_every=100,
    habit_copies=2,
)
_DEMO = ReproPreset(
    train_videos=120,
    eval_videos=16,
    model_size="s",
    base=_BASE_S,
    sft_steps=150,
    sft_save_every=25,
    sft_lr=1e-3,
    rl_steps=12,
    group_size=4,
    prompts_per_step=2,
    rl_lr=1e-4,
    ppo_epochs=2,
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
    ),
    # `make demo` (sft, vanilla_grpo, paragrpo)
    "demo": _DEMO,
    # the science run of docs/repro.md (every variant × seeds); the same base as demo and quick
    "science": replace(_DEMO, rl_steps=30, eval_videos=34),  # 102 held-out questions per n
    # every variant in one short run: a pipeline check, too short for the science
    "quick": replace(
        _DEMO,
        train_videos=60,
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
    cfg.prior.batch_size = cfg.sft.batch_size = 2 if p.model_size == "xs" else 8
    cfg.sft.max_steps, cfg.sft.epochs, cfg.sft.save_every = p.sft_steps, 1000, p.sft_save_every
    cfg.sft.lr = p.sft_lr
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
    return cfg


def with_config_overrides(cfg: TrainConfig, overrides: Sequence[str]) -> TrainConfig:
    """``cfg`` with ``--set a.b=value`` strings applied, validated (the config's own checks, e.g.
    replicas only on a CPU); ``cfg`` itself when there are none."""
    from paravt.config.loading import resolve

    if not overrides:
        return cfg
    return resolve(TrainConfig, cfg.model_dump(mode="json"), "paravt repro --set", overrides)


_stage, _done = start_stage, finish_stage


def _train(
    cfg: TrainConfig, kind: str, out: Path, what: str, *, run_name: str, **fields: Any
) -> Path:
    """Train stage ``out`` (resumed if it ran before); ``run_name``: its trackers' run name, e.g.
    paragrpo/seed0, in the group of the repro (``logging.group``)."""
    from paravt.rl.loop import run_training

    c = cfg.model_copy(deep=True)
    c.out_dir = str(out)
    c.logging.run_name = run_name
    for k, v in fields.items():
        setattr(c, k, v)
    if _stage(out, what):
        run_training(c, kind=kind, resume=True)  # type: ignore[arg-type]
        _done(out)
    return out


def pretrained_base(
    out: Path, cfg: TrainConfig, p: ReproPreset, prior: str, bases: Path
) -> tuple[Path, dict[str, Any]]:
    """The shared simulated pretrained base of this prior (``repro.bases``), copied into
    ``out/prior_PRIOR/model``; returns that path and the base's held-out probe."""
    from paravt.repro.bases import base_key, base_settings, copy_model, ensure_base

    pc = cfg.model_copy(deep=True)
    pc.prior.tool_mix = p.base.tool_mix if prior == "strong" else 0.0
    settings = base_settings(
        pc,
        videos=p.base.videos,
        probe_videos=p.base.probe_videos,
        model_size=p.model_size,
        probe_max_new_tokens=p.sub_max_new_tokens,
        needle_kinds=p.needle_kinds,
        durations=p.durations,
    )
    pdir = out / f"prior_{prior}"
    if _stage(pdir, f"{prior} prior: the simulated pretrained base {base_key(settings)}"):
        model, probe = ensure_base(bases, pc, settings, prior)
        copy_model(model, pdir / "model")
        (pdir / "base.json").write_text(
            json.dumps(
                {
                    "key": base_key(settings),
                    "dir": str(model.parent.parent),
                    "settings": settings,
                    "probe": probe,
                },
                indent=1,
            )
        )
        _done(pdir)
    return pdir / "model", json.loads((pdir / "base.json").read_text())["probe"]


def cold_start(
    out: Path, cfg: TrainConfig, p: ReproPreset, prior: str, bases: Path
) -> dict[str, Any]:
    """Pretrained base → SFT → selection for one prior; returns ``selection.json``'s content with
    the base's probe under ``"base_probe"``."""
    from paravt.agent import EpisodeSettings
    from paravt.data.episodes import load_episode_inputs
    from paravt.repro.select import select_checkpoint

    model, probe = pretrained_base(out, cfg, p, prior, bases)
    sdir = _train(
        cfg,
        "sft",
        out / f"sft_{prior}",
        f"SFT cold start ({prior} prior)",
        run_name=f"sft_{prior}",
        data=str(out / "synth" / "sft.parquet"),
        model=cfg.model.model_copy(update={"path": str(model)}),
    )
    if _stage(sdir / "select", f"checkpoint selection ({prior} prior)"):
        inputs = load_episode_inputs(out / "synth" / "rl.parquet", limit=p.probe_prompts)
        settings = EpisodeSettings.from_config(with_overrides(cfg, {"rollout.think_prefix": False}))
        select_checkpoint(sdir, inputs, settings, k=p.probe_k, tolerance=p.select_tolerance)
        _done(sdir / "select")
    return {**json.loads((sdir / "selection.json").read_text()), "base_probe": probe}


def train_variant(
    out: Path, cfg: TrainConfig, p: ReproPreset, v: Variant, seed: int, init: str
) -> dict[str, float]:
    """Train one (variant, seed); its per-seed training metrics (tail of the RL log, or for the
    cold start itself a τ = 0.7 probe of the chosen checkpoint)."""
    from paravt.agent import EpisodeSettings
    from paravt.data.episodes import load_episode_inputs
    from paravt.jsonl import read_jsonl
    from paravt.repro.probe import sample_metrics
    from paravt.repro.summary import tail_means

    vcfg = with_overrides(cfg, {**v.overrides, "rl.seed": seed})
    run = out / v.name / f"seed{seed}"
    if not v.rl:
        probe = run / "probe.json"
        if _stage(run, f"{v.name} seed {seed}: τ=0.7 probe"):
            inputs = load_episode_inputs(out / "synth" / "rl.parquet", limit=p.probe_prompts)
            settings = EpisodeSettings.from_config(
                with_overrides(vcfg, {"rollout.think_prefix": False})
            )
            probe.write_text(
                json.dumps(sample_metrics(init, inputs, settings, k=p.probe_k, seed=seed))
            )
            _done(run)
        return json.loads(probe.read_text())
    _train(
        vcfg,
        "rl",
        run,
        f"{v.name} seed {seed}",
        run_name=f"{v.name}/seed{seed}",
        model=vcfg.model.model_copy(update={"path": init}),
    )
    return tail_means(read_jsonl(run / "train_log.jsonl"))


def eval_variant(
    out: Path,
    cfg: TrainConfig,
    p: ReproPreset,
    v: Variant,
    seed: int,
    model: str,
    limit: int | None,
) -> list[dict[str, Any]]:
    """Greedy eval of one (variant, seed) on the held-out questions; its rows for the summary."""
    from paravt.agent import EpisodeSettings
    from paravt.agent.backend import open_backend
    from paravt.data.episodes import load_episode_inputs
    from paravt.eval.results import load_results
    from paravt.eval.runner import evaluate

    settings = EpisodeSettings.from_config(with_overrides(cfg, dict(v.overrides)), temperature=0.0)
    ns = sorted(set(p.eval_ns) | (set(p.grid_ns) if v.full_grid else set()))
    plan = [(n, MODES if v.full_grid and n in p.grid_ns else ("parallel",)) for n in ns]
    rows: list[dict[str, Any]] = []
    backend = None
    for n, modes in plan:
        d = out / v.name / f"seed{seed}" / f"eval_n{n}"
        if _stage(d, f"eval {v.name} seed {seed} n={n} {'/'.join(modes)}"):
            backend = backend or open_backend(
                cfg.model.model_copy(update={"path": model}), cfg.rollout
            )
            samples = load_episode_inputs(out / "synth" / "eval.parquet", nframes=n, limit=limit)
            evaluate(
                samples,
                backend,
                settings,
                modes=list(modes),
                out=d,
                workers=cfg.eval.workers,
                progress=True,
            )
            _done(d)
        rows += [
            {
                "id": r.id,
                "mode": r.mode,
                "nframes": n,
                "score": r.score,
                "seed": seed,
                "tool_necessary": r.tool_necessary,
            }
            for r in load_results(d / "results.jsonl")
        ]
    if backend is not None:
        asyncio.run(
            backend.generator.aclose()
        )  # ends replica processes (paravt.models.hf.replicas)
    return rows


def _diagnosis(out: Path, v: Variant, needles: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """The parallel pipeline's diagnosis over every seed and n of a variant
    (``repro.diagnosis``)."""
    from paravt.eval.results import load_results
    from paravt.repro.diagnosis import diagnose

    rows = [
        r
        for f in sorted((out / v.name).glob("seed*/eval_n*/results.jsonl"))
        for r in load_results(f)
    ]
    return diagnose(rows, needles)


def _task_check(
    out: Path, eval_rows: dict[str, list[dict[str, Any]]], limit: int | None
) -> dict[str, Any]:
    """Deliverable 7 on this run (``repro.task_check``): the task's needle property and the
    reference checkpoint's direct-vs-tool accuracy."""
    from paravt.data.episodes import load_episode_inputs
    from paravt.repro.task_check import chance_score, check_task

    manifest = json.loads((out / "synth" / "manifest.json").read_text())
    chance = chance_score(
        [s.options for s in load_episode_inputs(out / "synth" / "eval.parquet", limit=limit)]
    )
    return check_task(manifest["needle"]["eval_prompts"], chance, eval_rows)


def _stage_checks(strong: dict[str, Any], chosen_metrics: dict[str, float]) -> dict[str, Any]:
    """Issue 27's stage targets: the strong base's held-out probe (before SFT) and the strong-prior
    RL init's cold start (``repro.base_probe``, ``repro.task_check.cold_start_checks``)."""
    from paravt.repro.base_probe import base_checks
    from paravt.repro.task_check import cold_start_checks

    return {**base_checks(strong.get("base_probe") or {}), **cold_start_checks(chosen_metrics)}


def run_repro(
    out: Path,
    *,
    preset: str = "quick",
    seeds: int = 1,
    variants: str | None = None,
    eval_limit: int | None = None,
    bases: Path | None = None,
    overrides: Sequence[str] = (),
) -> Path:
    """Run every stage for the chosen variants and seeds; returns ``out/summary.json``. The
    pretrained bases are built once under ``bases`` (default ``OUT/../bases``: shared by the runs
    beside ``out``). ``overrides`` (``--set a.b=value``) apply to the preset's config of EVERY stage
    and variant, e.g. ``model.device=cuda``, ``model.replicas=1`` on an accelerator; the base's
    cache key holds what the base learns (``repro.bases.base_settings``), not where it runs. One
    writer per ``out`` from the first stage: the run holds ``out``'s lock (`paravt.runlock`)
    throughout, and a second run on it stops at once with `OutputLocked` naming the first."""
    from paravt import runlock

    with runlock.hold(out, "paravt repro"):
        return _run_repro(
            out,
            preset=preset,
            seeds=seeds,
            variants=variants,
            eval_limit=eval_limit,
            bases=bases,
            overrides=overrides,
        )


def _run_repro(
    out: Path,
    *,
    preset: str,
    seeds: int,
    variants: str | None,
    eval_limit: int | None,
    bases: Path | None,
    overrides: Sequence[str],
) -> Path:
    from paravt.data.synth.build import build
    from paravt.repro.claims import check_claims
    from paravt.repro.diagnosis import needle_windows
    from paravt.repro.summary import variant_summary
    from paravt.repro.task_check import COLD_START, cold_start_task_checks

    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    p, chosen, t0 = PRESETS[preset], pick(variants), time.perf_counter()
    if seeds < 1:
        raise ValueError(f"--seeds must be ≥ 1, got {seeds}")
    cfg = with_config_overrides(base_config(out, p), overrides)  # a bad --set fails before any work
    out.mkdir(parents=True, exist_ok=True)
    if _stage(out / "synth", "ParaVT-Synth"):
        build(
            out / "synth",
            videos=p.train_videos,
            eval_videos=p.eval_videos,
            seed=0,
            workers=2,
            needle_kinds=p.needle_kinds,
            min_duration=p.durations[0],
            max_duration=p.durations[1],
        )
        _done(out / "synth")
    root = bases or out.resolve().parent / "bases"
    selections = {k: cold_start(out, cfg, p, k, root) for k in sorted({v.prior for v in chosen})}
    summaries: dict[str, Any] = {}
    needles = needle_windows(str(out / "synth" / "eval.parquet"))  # read once for every variant
    eval_rows: dict[str, list[dict[str, Any]]] = {}
    for v in chosen:
        init = selections[v.prior]["chosen_path"]
        per_seed, rows = [], []
        for s in range(seeds):
            per_seed.append(train_variant(out, cfg, p, v, s, init))
            model = init if not v.rl else str(out / v.name / f"seed{s}" / "model")
            if v.rl or s == 0:  # greedy eval of the one cold-start model: the same for every seed
                rows += eval_variant(out, cfg, p, v, s, model, eval_limit)
        summaries[v.name], eval_rows[v.name] = variant_summary(per_seed, rows), rows
        summaries[v.name]["diagnosis"] = _diagnosis(out, v, needles)
    task = _task_check(out, eval_rows, eval_limit)
    strong = selections.get("strong") or next(iter(selections.values()))
    chosen_metrics = next(
        c["metrics"] for c in strong["candidates"] if c["path"] == strong["chosen_path"]
    )
    task.update(_stage_checks(strong, chosen_metrics))
    task.update(
        cold_start_task_checks(
            eval_rows.get(COLD_START, []),
            summaries.get(COLD_START, {}).get("diagnosis", {}),
            chosen_metrics,
        )
    )
    summary = {
        "variants": summaries,
        "sft_emits_think_without_prefix": chosen_metrics.get("closed/think"),
        "claims": check_claims(summaries, eval_rows),
        "task_check": task,
        "selection": selections,
        "meta": {
            "preset": preset,
            "seeds": seeds,
            "variants": [v.name for v in chosen],
            "eval_questions": len({r["id"] for rows in eval_rows.values() for r in rows}),
            "wall_s": round(time.perf_counter() - t0, 1),
            "stage_s": stage_times(out),
        },
    }
    path = out / "summary.json"
    write_atomic(path, json.dumps(summary, indent=1, default=float), "the repro summary")
    console.print(f"[bold green]summary:[/bold green] {path}", soft_wrap=True)
    return path
