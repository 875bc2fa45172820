"""`paravt repro`'s results in the trackers ``logging.loggers`` lists, beside its training stages:
one run per eval (``VARIANT/seedS/eval_nN``: its metrics.json) and one ``summary`` run (the
claims, the stage checks and the variant table as tables, their numbers as metrics), all in the
repro's group and its one MLflow store (``OUT/mlruns/mlflow.db``, `paravt.repro.presets`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from paravt.config import TrainConfig
from paravt.tracking import TrackingSettings
from paravt.tracking.results import keyed_table, log_result_run, records_table

SUMMARY_DIR = "summary_run"  # the summary run's tracker files (tracking.json, wandb/, tb/)


def track_evals(seed_dir: Path, cfg: TrainConfig, name: str) -> list[str]:
    """Each finished eval under ``seed_dir`` as the run ``NAME/eval_nN``; returns the runs
    logged now (an eval logged before is not logged again)."""
    s = TrackingSettings.from_config(cfg.logging)
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
        TrackingSettings.from_config(cfg.logging),
        run_name="summary",
        metrics=metrics,
        tables=tables,
    )
