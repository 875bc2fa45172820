"""The work of the training and eval stages of `paravt repro`: the simulated pretrained base, the
SFT cold start and its checkpoint selection, a variant's RL run and its eval. Each stage is
resumable (``paravt.repro.stages``): one that finished is skipped on the next run."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from paravt.config import TrainConfig
from paravt.repro.presets import ReproPreset
from paravt.repro.stages import finish_stage, start_stage
from paravt.repro.variants import Variant, with_overrides

log = logging.getLogger(__name__)
MODES = ("parallel", "sequential", "none")
_stage, _done = start_stage, finish_stage


def train_stage(
    cfg: TrainConfig, kind: str, out: Path, what: str, *, run_name: str, **fields: Any
) -> Path:
    """Train stage ``out`` (resumed if it ran before); ``run_name``: its trackers' run name, e.g.
    paragrpo/seed0, in the group of the repro (``logging.group``)."""
    from paravt.rl.loop import run_training

    c = cfg.model_copy(deep=True)
    c.out_dir = str(out)
    c.logging.run_name = run_name
    c.logging.variant = run_name.split("/", 1)[0]  # its tracker runs' variant tag
    for k, v in fields.items():
        setattr(c, k, v)
    if _stage(out, what):
        run_training(c, kind=kind, resume=True)  # type: ignore[arg-type]
        _done(out)
    return out


def prior_config(cfg: TrainConfig, prior: str) -> TrainConfig:
    """``cfg`` with the ``prior`` section of ``prior``'s base: the strong prior as set, the weak one
    with no tool form and short thinks (paper: Qwen2.5-VL), and no report stage: its drills are the
    strong prior's native tool transcripts, their call turns trained (the weak base is the strong
    one's schedule without the stage: ``steps`` less ``report_steps``)."""
    pc = cfg.model_copy(deep=True)
    if prior != "strong":
        p = pc.prior
        p.tool_mix, p.think_tail, p.think_runaway = 0.0, 0.0, 0.0
        p.steps, p.report_steps, p.report_replay = p.steps - p.report_steps, 0, 0.0
    return pc


def preset_base_settings(cfg: TrainConfig, p: ReproPreset) -> dict[str, Any]:
    """What the base of ``cfg``'s prior section under preset ``p`` depends on (its cache key's
    content, ``repro.bases.base_settings``)."""
    from paravt.repro.bases import base_settings

    return base_settings(
        cfg,
        videos=p.base.videos,
        probe_videos=p.base.probe_videos,
        model_size=p.model_size,
        probe_max_new_tokens=p.sub_max_new_tokens,
        needle_kinds=p.needle_kinds,
        durations=p.durations,
    )


def pretrained_base(
    out: Path, cfg: TrainConfig, p: ReproPreset, prior: str, bases: Path
) -> tuple[Path, dict[str, Any]]:
    """The shared simulated pretrained base of this prior (``repro.bases``), copied into
    ``out/prior_PRIOR/model``; returns that path and the base's held-out probe."""
    from paravt.repro.bases import base_key, copy_model, ensure_base

    pc = prior_config(cfg, prior)
    settings = preset_base_settings(pc, p)
    pdir = out / f"prior_{prior}"
    if _stage(pdir, f"{prior} prior: the simulated pretrained base {base_key(settings)}"):
        model, probe = ensure_base(bases, pc, settings, prior)
        copy_model(model, pdir / "model")
        habit = habit_probe(out, cfg, p, pdir / "model")
        (pdir / "base.json").write_text(
            json.dumps(
                {
                    "key": base_key(settings),
                    "dir": str(model.parent.parent),
                    "settings": settings,
                    "probe": {**probe, "habit": habit},
                },
                indent=1,
            )
        )
        _done(pdir)
    return pdir / "model", json.loads((pdir / "base.json").read_text())["probe"]


def habit_probe(out: Path, cfg: TrainConfig, p: ReproPreset, model: Path) -> dict[str, float]:
    """The base's own habits under τ = 0.7 on the RL prompts at the RL turn budget, no think prefix
    (``repro.probe``): closure, tool forms (JSON ``<tool_call>`` vs ``<tool_code>``) and how many
    of its thinks run past the budget unclosed (``closed/think``)."""
    from paravt.agent import EpisodeSettings
    from paravt.agent.inputs import load_episode_inputs
    from paravt.repro.probe import sample_metrics

    inputs = load_episode_inputs(out / "synth" / "rl.parquet", limit=p.probe_prompts)
    settings = EpisodeSettings.from_config(
        with_overrides(cfg, {"rollout.think_prefix": False}), training=True
    )
    return sample_metrics(str(model), inputs, settings, k=p.probe_k, seed=0)


def cold_start(
    out: Path, cfg: TrainConfig, p: ReproPreset, prior: str, bases: Path
) -> dict[str, Any]:
    """Pretrained base → SFT → selection for one prior; returns ``selection.json``'s content with
    the base's probe under ``"base_probe"``."""
    from paravt.agent import EpisodeSettings
    from paravt.agent.inputs import load_episode_inputs
    from paravt.repro.select import select_checkpoint

    model, probe = pretrained_base(out, cfg, p, prior, bases)
    sdir = train_stage(
        cfg,
        "sft",
        out / f"sft_{prior}",
        f"SFT cold start ({prior} prior)",
        run_name=f"sft_{prior}",
        data=str(out / "synth" / "sft.parquet"),
        model=cfg.model.model_copy(update={"path": str(model)}),
        prior=prior_config(cfg, prior).prior,  # sft.prior_replay replays THIS base's habits
    )
    if _stage(sdir / "select", f"checkpoint selection ({prior} prior)"):
        inputs = load_episode_inputs(out / "synth" / "rl.parquet", limit=p.probe_prompts)
        settings = EpisodeSettings.from_config(
            with_overrides(cfg, {"rollout.think_prefix": False}), training=True
        )
        select_checkpoint(sdir, inputs, settings, k=p.probe_k, tolerance=p.select_tolerance)
        _done(sdir / "select")
    return {**json.loads((sdir / "selection.json").read_text()), "base_probe": probe}


def rl_pool(out: Path, cfg: TrainConfig, prior: str, init: str) -> tuple[Path, dict[str, Any]]:
    """The RL prompts this prior's variants draw from, and the filter's report. ``rl.filter``
    offline [paper]: the DAPO pre-filter (``paravt.rl.prefilter``) ONCE, on the chosen cold start
    ``init``: G = ``rl.group_size`` rollouts per prompt of ``synth/rl.parquet`` (the pool, sized to
    the run) at the RL temperature and the default overview budget, all-wrong and unanimous groups
    dropped (``sft_PRIOR/prefilter/``: the kept rows, ``prefilter.json``, and every rollout with
    its answer and accuracy in ``rollouts.jsonl``). The rollouts are seeded by ``rl.seed``
    (`paravt.rl.prefilter`), so a resumed run filters exactly as an uninterrupted one. If fewer
    than ``rl.prompts_per_step`` prompts would stay, the pool is kept whole, the report says so
    (``fallback``) and so does one line on stderr, on every run that trains on that pool (the
    HTML report shows it too). Online: the pool as it is."""
    pool = out / "synth" / "rl.parquet"
    if cfg.rl.filter != "offline":
        return pool, {"filter": "online"}
    d = out / f"sft_{prior}" / "prefilter"
    if _stage(d, f"offline DAPO filter of the RL prompts ({prior} prior)"):
        _offline_filter(pool, d, cfg, init)
        _done(d)
    report = json.loads((d / "prefilter.json").read_text())
    if report.get("fallback"):
        from paravt.rl.prefilter import fallback_line

        log.warning("%s", fallback_line(prior, report, d / "prefilter.json"))
    return d / "rl.parquet", report


def _offline_filter(pool: Path, d: Path, cfg: TrainConfig, init: str) -> None:
    from paravt.agent import EpisodeSettings
    from paravt.agent.backend import open_backend
    from paravt.data.schema import read_rows, write_rows
    from paravt.jsonl import rewrite_jsonl, write_atomic
    from paravt.rl.prefilter import accuracies_of, filter_rollouts, prefilter

    rows = read_rows(pool)
    settings = EpisodeSettings.from_config(cfg, training=True)
    n = cfg.video.overview_nframes
    backend = open_backend(cfg.model.model_copy(update={"path": init}), cfg.rollout)
    try:
        rollouts = asyncio.run(
            filter_rollouts(
                rows,
                pool.parent,
                generator=backend.generator,
                codec=backend.codec,
                settings=settings,
                g=cfg.rl.group_size,
                tools=backend.tools,
                nframes=n,
                seed=cfg.rl.seed,
            )
        )
    finally:
        asyncio.run(backend.generator.aclose())
    kept, report = prefilter(rows, accuracies_of(rollouts))
    fallback = None
    if len(kept) < cfg.rl.prompts_per_step:
        fallback = f"{len(kept)} kept < rl.prompts_per_step={cfg.rl.prompts_per_step}: pool kept"
        kept = list(rows)
    write_rows(d / "rl.parquet", kept)
    rewrite_jsonl(d / "rollouts.jsonl", [r.to_json() for r in rollouts])
    meta = {"filter": "offline", "pool": len(rows), "g": cfg.rl.group_size, "nframes": n}
    meta |= {"temperature": settings.sampling.temperature, "seed": cfg.rl.seed}
    mean = sum(r.accuracy for r in rollouts) / len(rollouts) if rollouts else None
    meta |= {"mean_accuracy": mean, "fallback": fallback}
    text = json.dumps({**meta, **report.to_json()}, indent=1)
    write_atomic(d / "prefilter.json", text, "the offline filter's report")


def path_probe_stage(
    out: Path, cfg: TrainConfig, p: ReproPreset, prior: str, init: str, pool: Path
) -> dict[str, Any]:
    """The reward-by-path probe (``repro.path_probe``) of this prior's RL init on its RL prompts
    ``pool`` (after the offline filter), once: ``sft_PRIOR/paths/paths.json`` and the raw
    rollouts beside it (``rollouts.jsonl``)."""
    from paravt.jsonl import rewrite_jsonl, write_atomic
    from paravt.repro.path_probe import PathProbeSpec, reward_by_path

    d = out / f"sft_{prior}" / "paths"
    if _stage(d, f"reward by path of the RL init ({prior} prior)"):
        spec = PathProbeSpec(
            budgets=p.path_budgets, k=cfg.rl.group_size, prompts=p.path_prompts, seed=0
        )
        tables, raw = reward_by_path(init, pool, cfg, spec, root=out / "synth")
        rewrite_jsonl(d / "rollouts.jsonl", raw)
        write_atomic(d / "paths.json", json.dumps(tables, indent=1), "the reward-by-path table")
        _done(d)
    return json.loads((d / "paths.json").read_text())


def train_variant(
    out: Path, cfg: TrainConfig, p: ReproPreset, v: Variant, seed: int, init: str
) -> dict[str, float]:
    """Train one (variant, seed); its per-seed training metrics (tail of the RL log, or for the
    cold start itself a τ = 0.7 probe of the chosen checkpoint at the un-gated variants' budget,
    ``video.overview_nframes``: the claims compare vanilla GRPO's κ with the cold start's at the
    budget vanilla trains at)."""
    from paravt.agent import EpisodeSettings
    from paravt.agent.inputs import load_episode_inputs
    from paravt.jsonl import read_jsonl
    from paravt.repro.probe import sample_metrics
    from paravt.repro.summary import tail_means

    vcfg = with_overrides(cfg, {**v.overrides, "rl.seed": seed})
    run = out / v.name / f"seed{seed}"
    if not v.rl:
        probe = run / "probe.json"
        if _stage(run, f"{v.name} seed {seed}: τ=0.7 probe"):
            inputs = load_episode_inputs(
                out / "synth" / "rl.parquet",
                nframes=vcfg.video.overview_nframes,
                limit=p.probe_prompts,
            )
            settings = EpisodeSettings.from_config(
                with_overrides(vcfg, {"rollout.think_prefix": False}), training=True
            )
            probe.write_text(
                json.dumps(sample_metrics(init, inputs, settings, k=p.probe_k, seed=seed))
            )
            _done(run)
        return json.loads(probe.read_text())
    train_stage(
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
    from paravt.agent.inputs import load_episode_inputs
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
                "task": r.task,
                "tool_necessary": r.tool_necessary,
                # what the answer-form check reads (repro.task_check.answer_form_check)
                "prediction": r.prediction,
                "options": list(r.options) if r.options is not None else None,
            }
            for r in load_results(d / "results.jsonl")
        ]
    if backend is not None:
        asyncio.run(
            backend.generator.aclose()
        )  # ends replica processes (paravt.models.hf.replicas)
    return rows
