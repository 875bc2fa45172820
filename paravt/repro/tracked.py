"""`paravt repro`'s results in the trackers ``logging.loggers`` lists, beside its training stages:
one run per eval (``VARIANT/seedS/eval_nN``: its metrics.json, tagged kind eval with its variant
and seed, and in MLflow nested under the training run of the model it evaluated) and one
``summary`` run (the claims, the stage checks and the variant table as tables, their numbers as
metrics; ``report.html`` as its artifact), all in the repro's group and its one MLflow store
(``OUT/mlruns/mlflow.db``, `paravt.repro.presets`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from paravt.config import TrainConfig
from paravt.tracking import TrackingSettings, attach_report, read_state
from paravt.tracking.results import keyed_table, log_result_run, records_table

SUMMARY_DIR = "summary_run"  # the summary run's tracker files (tracking.json, wandb/, tb/)


def track_evals(
    seed_dir: Path, cfg: TrainConfig, *, variant: str, seed: int, trained: Path
) -> list[str]:
    """Each finished eval under ``seed_dir`` as the run ``VARIANT/seedS/eval_nN``, nested (MLflow)
    under the training run in ``trained`` (the RL seed's run, or the SFT cold start's for a variant
    without RL); returns the runs logged now (an eval logged before is not logged again)."""
    parent = (read_state(trained).get("mlflow") or {}).get("run_id")
    s = replace(TrackingSettings.from_config(cfg.logging), variant=variant).tagged(
        "eval", seed=seed, parent_run_id=str(parent) if parent else None
    )
    name = f"{variant}/seed{seed}"
    done = []
    for d in sorted(seed_dir.glob("eval_n*")):
        metrics = d / "metrics.json"
        if metrics.is_file():
            run_name = f"{name}/{d.name}"
            if log_result_run(d, s, run_name=run_name, metrics=json.loads(metrics.read_text())):
                done.append(run_name)
    return done


def track_summary(out: Path, cfg: TrainConfig, summary: Mapping[str, Any]) -> bool:
    """The summary as the run ``summary``: claims (holds 0/1), stage checks and every variant's
    numbers as metrics; the claims, stage checks and variant table as tables."""
    claims = list(summary.get("claims") or [])
    checks = summary.get("task_check") or {}
    variants = summary.get("variants") or {}
    metrics = {
        "claims/held": sum(bool(c.get("holds")) for c in claims),
        "claims/total": len(claims),
        "claims/holds": {str(i): bool(c.get("holds")) for i, c in enumerate(claims)},
        "stage_checks": checks,
        "variants": variants,
    }  # not meta's wall times: a rerun that skips every stage has the same content
    tables = {
        "claims": records_table(claims),
        "stage_checks": keyed_table(checks, "check"),
        "variants": keyed_table(variants, "variant"),
    }
    return log_result_run(
        out / SUMMARY_DIR,
        TrackingSettings.from_config(cfg.logging).tagged("summary"),
        run_name="summary",
        metrics=metrics,
        tables=tables,
    )


def attach_summary_report(out: Path, report: Path) -> list[str]:
    """``report`` (report.html) as an artifact of the summary run's wandb and MLflow runs."""
    return attach_report([out / SUMMARY_DIR], report) if (out / SUMMARY_DIR).is_dir() else []
