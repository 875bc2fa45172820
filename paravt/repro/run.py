"""`paravt repro`: simulated tool prior → SFT cold start → measured early-checkpoint selection →
the Table 2 variants (``paravt.repro.variants``) × seeds → eval → ``DIR/summary.json``.

Resumable stage by stage like `paravt demo`: a stage that finished writes a marker and is skipped
on the next run with the same ``--out``; trainings continue from their last checkpoint and evals
by sample id. Every number in the summary is measured in the run (docs/repro.md).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paravt.config import TrainConfig
from paravt.jsonl import write_atomic
from paravt.repro.presets import PRESETS, ReproPreset, base_config, with_config_overrides
from paravt.repro.stages import console, finish_stage, stage_times, start_stage
from paravt.repro.tracked import track_evals, track_summary
from paravt.repro.training import cold_start, eval_variant, train_variant
from paravt.repro.variants import Variant, pick

_stage, _done = start_stage, finish_stage


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
    from paravt.agent.inputs import load_episode_inputs
    from paravt.repro.task_check import chance_score, check_task

    manifest = json.loads((out / "synth" / "manifest.json").read_text())
    chance = chance_score(
        [s.options for s in load_episode_inputs(out / "synth" / "eval.parquet", limit=limit)]
    )
    return check_task(manifest["needle"]["eval_prompts"], chance, eval_rows)


def _weak_checks(weak: dict[str, Any], strong_metrics: dict[str, float]) -> dict[str, Any]:
    """The weak prior's base (no tool form) and cold start (format kept) checks."""
    from paravt.repro.base_probe import habit_checks
    from paravt.repro.task_check import weak_prior_checks

    metrics = next(c["metrics"] for c in weak["candidates"] if c["path"] == weak["chosen_path"])
    return {
        **habit_checks((weak.get("base_probe") or {}).get("habit"), strong=False),
        **weak_prior_checks(metrics, strong_metrics),
    }


def _at_budget(cold: Mapping[str, Any]) -> dict[str, float]:
    """The cold start's κ at the un-gated budget (the ``sft`` variant's probe, mean over seeds),
    which the checks and claims compare with; empty when the ``sft`` variant did not run."""
    mean = (cold.get("kappa") or {}).get("mean")
    return {} if mean is None else {"kappa": float(mean)}


def _stage_checks(strong: dict[str, Any], chosen_metrics: dict[str, float]) -> dict[str, Any]:
    """Issue 27's stage targets: the strong base's held-out probe (before SFT) and the strong-prior
    RL init's cold start (``repro.base_probe``, ``repro.task_check.cold_start_checks``)."""
    from paravt.repro.base_probe import base_checks, habit_checks
    from paravt.repro.task_check import cold_start_checks

    probe = strong.get("base_probe") or {}
    return {
        **base_checks(probe),
        **habit_checks(probe.get("habit"), strong=True),
        **cold_start_checks(chosen_metrics),
    }


def _every_stage_check(
    selections: Mapping[Any, dict[str, Any]],
    summaries: Mapping[str, Any],
    eval_rows: Mapping[str, list[dict[str, Any]]],
    strong: dict[str, Any],
    chosen_metrics: dict[str, float],
) -> dict[str, Any]:
    """The stage checks (base, habits, cold start, the weak prior's when both priors ran, and the
    cold start's eval checks), each ``{"value", "want", "holds"}``."""
    from paravt.repro.task_check import COLD_START, cold_start_task_checks

    task = _stage_checks(strong, chosen_metrics)
    if "weak" in selections and "strong" in selections:
        task.update(_weak_checks(selections["weak"], chosen_metrics))
    cold = summaries.get(COLD_START, {})
    task.update(
        cold_start_task_checks(
            eval_rows.get(COLD_START, []),
            cold.get("diagnosis", {}),
            {**chosen_metrics, **_at_budget(cold)},
        )
    )
    return task


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


def _synth_stage(out: Path, p: ReproPreset) -> None:
    """The run's ParaVT-Synth (train and eval videos and rows), built once."""
    from paravt.data.synth.build import SceneSpec, build

    if _stage(out / "synth", "ParaVT-Synth"):
        build(
            out / "synth",
            videos=p.train_videos,
            rl_videos=p.rl_videos,
            eval_videos=p.eval_videos,
            seed=0,
            workers=2,
            scenes=SceneSpec(
                needle_kinds=p.needle_kinds,
                min_duration=p.durations[0],
                max_duration=p.durations[1],
            ),
        )
        _done(out / "synth")


def _run_variants(
    out: Path,
    cfg: TrainConfig,
    p: ReproPreset,
    chosen: Sequence[Variant],
    seeds: int,
    selections: Mapping[Any, dict[str, Any]],
    eval_limit: int | None,
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Train and evaluate every chosen variant on every seed, from its prior's selected cold
    start, on its prior's RL prompts (``training.rl_pool``: the offline filter's, recorded in the
    selection under ``prefilter``): each variant's summary (with its diagnosis) and its eval
    rows."""
    from paravt.repro.training import path_probe_stage, rl_pool

    cfgs = {}
    for prior, sel in selections.items():
        pool, sel["prefilter"] = rl_pool(out, cfg, prior, sel["chosen_path"])
        cfgs[prior] = cfg.model_copy(update={"data": str(pool), "data_root": str(out / "synth")})
        sel["reward_by_path"] = path_probe_stage(out, cfg, p, prior, sel["chosen_path"], pool)
    from paravt.repro.diagnosis import needle_windows
    from paravt.repro.summary import variant_summary

    summaries: dict[str, Any] = {}
    needles = needle_windows(str(out / "synth" / "eval.parquet"))  # read once for every variant
    eval_rows: dict[str, list[dict[str, Any]]] = {}
    for v in chosen:
        init = selections[v.prior]["chosen_path"]
        per_seed, rows = [], []
        for s in range(seeds):
            per_seed.append(train_variant(out, cfgs[v.prior], p, v, s, init))
            model = init if not v.rl else str(out / v.name / f"seed{s}" / "model")
            if v.rl or s == 0:  # greedy eval of the one cold-start model: the same for every seed
                rows += eval_variant(out, cfg, p, v, s, model, eval_limit)
                trained = out / (v.name if v.rl else f"sft_{v.prior}")
                track_evals(
                    out / v.name / f"seed{s}",
                    cfg,
                    variant=v.name,
                    seed=s,
                    trained=trained / f"seed{s}" if v.rl else trained,
                )
        summaries[v.name], eval_rows[v.name] = variant_summary(per_seed, rows), rows
        summaries[v.name]["diagnosis"] = _diagnosis(out, v, needles)
    return summaries, eval_rows


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
    from paravt.repro.claims import check_claims

    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    p, chosen, t0 = PRESETS[preset], pick(variants), time.perf_counter()
    if seeds < 1:
        raise ValueError(f"--seeds must be ≥ 1, got {seeds}")
    cfg = with_config_overrides(base_config(out, p), overrides)  # a bad --set fails before any work
    out.mkdir(parents=True, exist_ok=True)
    _synth_stage(out, p)
    root = bases or out.resolve().parent / "bases"
    selections = {k: cold_start(out, cfg, p, k, root) for k in sorted({v.prior for v in chosen})}
    summaries, eval_rows = _run_variants(out, cfg, p, chosen, seeds, selections, eval_limit)
    task = _task_check(out, eval_rows, eval_limit)
    strong = selections.get("strong") or next(iter(selections.values()))
    chosen_metrics = next(
        c["metrics"] for c in strong["candidates"] if c["path"] == strong["chosen_path"]
    )
    task.update(_every_stage_check(selections, summaries, eval_rows, strong, chosen_metrics))
    summary = {
        "variants": summaries,
        "sft_emits_think_without_prefix": chosen_metrics.get("closed/think"),
        # the RL init's reward by path (issue 47 M3), before any update: the strong prior's
        "reward_by_path": strong.get("reward_by_path"),
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
    track_summary(out, cfg, summary)
    console.print(f"[bold green]summary:[/bold green] {path}", soft_wrap=True)
    return path
