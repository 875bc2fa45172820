"""The stage checks over several simulated bases (issue 47, M1/M2): a check holds only when it holds
on the base built with EACH seed, since a check that holds for one base build and not the next
does not hold.

``paravt repro --base-seeds N`` runs the pipeline once per base seed ``s`` (``prior.seed = s``:
the base's batch order and torch RNG, so each seed is another base under its own cache key) into
``OUT/base_seedS/``, every run sharing one cache of bases (``OUT/bases``), then writes
``OUT/checks.json`` (``checks_over_seeds``). ``--checks-only`` stops each run at the cold start:
base, SFT, selection, the offline filter, the RL init's reward by path and the ``sft`` variant's
probe and greedy eval: every stage check, no RL.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paravt.jsonl import write_atomic

CHECKS_ONLY_VARIANTS = "sft"


def checks_over_seeds(summaries: Mapping[int, Mapping[str, Any]]) -> dict[str, Any]:
    """Every ``task_check`` entry of the per-seed ``summaries`` side by side: ``{"checks": {NAME:
    {"values": [...], "holds": [...], "holds_on_all": bool}}, "held_on_all": [...],
    "reward_by_path": {seed: {variant: {n: predicted sign}}}, "seeds": [...]}``. A check absent
    from some seed's summary holds there as False (not measured never holds)."""
    from paravt.repro.paths import predicted_sign

    seeds = sorted(summaries)
    names: list[str] = []
    for s in seeds:
        for name, check in (summaries[s].get("task_check") or {}).items():
            if isinstance(check, Mapping) and "holds" in check and name not in names:
                names.append(name)
    checks: dict[str, Any] = {}
    for name in names:
        got = [(summaries[s].get("task_check") or {}).get(name) or {} for s in seeds]
        holds = [bool(c.get("holds", False)) for c in got]
        checks[name] = {
            "values": [c.get("value") for c in got],
            "want": next((c["want"] for c in got if "want" in c), None),
            "holds": holds,
            "holds_on_all": all(holds),
        }
    signs = {
        str(s): {
            v: {n: predicted_sign(t) for n, t in (by_n or {}).items()}
            for v, by_n in (summaries[s].get("reward_by_path") or {}).items()
        }
        for s in seeds
    }
    return {
        "seeds": seeds,
        "checks": checks,
        "held_on_all": [n for n in names if checks[n]["holds_on_all"]],
        "reward_by_path_sign": signs,
    }


def run_over_base_seeds(
    out: Path,
    *,
    preset: str,
    base_seeds: int,
    seeds: int,
    variants: str | None,
    eval_limit: int | None,
    overrides: Sequence[str],
) -> Path:
    """One `paravt repro` per base seed (module docstring); returns ``OUT/checks.json``."""
    from paravt.repro.run import run_repro

    if base_seeds < 1:
        raise ValueError(f"--base-seeds must be ≥ 1, got {base_seeds}")
    summaries = {}
    for s in range(base_seeds):
        path = run_repro(
            out / f"base_seed{s}",
            preset=preset,
            seeds=seeds,
            variants=variants,
            eval_limit=eval_limit,
            bases=out / "bases",
            overrides=[*overrides, f"prior.seed={s}"],
        )
        summaries[s] = json.loads(path.read_text())
    checks = checks_over_seeds(summaries)
    path = out / "checks.json"
    write_atomic(path, json.dumps(checks, indent=1, default=float), "the checks over base seeds")
    return path


__all__ = ["CHECKS_ONLY_VARIANTS", "checks_over_seeds", "run_over_base_seeds"]
