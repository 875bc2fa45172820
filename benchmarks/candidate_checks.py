"""The cold start's task checks at EVERY SFT candidate of a checks-only run, not only the chosen
one: the measurements that read the SFT's steps (docs/repro-log.md, 2026-12-07 j).

    .venv/bin/paravt repro --preset demo --checks-only --base-seeds 3 --set sft.max_steps=300 \\
        --out runs/m300
    .venv/bin/python benchmarks/candidate_checks.py runs/m300/base_seed0 --out runs/cand/s0 \\
        --steps 50,100,150,200,250,300

For each candidate (``repro.select.sft_checkpoints``) the part of the ``sft`` variant's greedy eval
the checks read (``none`` and ``parallel`` at n = 4, ``none`` at n = 64, the held-out questions, the
run's preset and ``--set`` overrides), then ``task_check.cold_start_task_checks`` on those rows with
the selection probe's metrics (its κ is the selection's, at the RL prompts' budgets, not the ``sft``
variant's n = 64 probe), and whether the main agent reads its tool response: of the open questions
at n = 4 where a window's summary names the right colour, the share answered with it (7 colours:
chance ≈ 0.14).
One JSON line per candidate; OUT/table.json holds them all.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paravt.agent import EpisodeSettings
from paravt.agent.backend import open_backend
from paravt.agent.inputs import load_episode_inputs
from paravt.config import TrainConfig
from paravt.data.synth.scenes import NEEDLE_COLORS
from paravt.eval.results import ResultRow, load_results
from paravt.eval.runner import evaluate
from paravt.repro.presets import PRESETS, base_config, with_config_overrides
from paravt.repro.select import sft_checkpoints
from paravt.repro.task_check import cold_start_task_checks

PLAN = ((4, ("none", "parallel")), (64, ("none",)))
METRICS = (
    "closed/all",
    "closed/think",
    "closed/tool_call",
    "closed/answer",
    "kappa",
    "tool_code_rate",
    "path/executed",
    "path/written_not_run",
    "path/direct",
    "path/broken",
)


def reads_reports(results: Sequence[ResultRow]) -> dict[str, int]:
    """Open questions of the ``parallel`` rows whose sub-agent summaries name the right colour,
    and how many of those the main agent answered with it."""
    named = answered = 0
    for r in results:
        if r.mode != "parallel" or r.task != "oe":
            continue
        reports = " ".join(t.text for t in r.transcript if t.role.startswith("sub"))
        seen = {c for c in NEEDLE_COLORS if re.search(rf"\b{c}\b", reports)}
        if r.answer in seen:
            named += 1
            answered += (r.prediction or "").strip().lower() == r.answer
    return {"named": named, "answered": answered}


def candidate_row(
    cfg: TrainConfig, run: Path, out: Path, step: int, model: Path, metrics: Mapping[str, float]
) -> dict[str, Any]:
    settings = EpisodeSettings.from_config(cfg, temperature=0.0)
    backend = None
    rows: list[dict[str, Any]] = []
    at4: list[ResultRow] = []
    try:
        for n, modes in PLAN:
            d = out / f"step{step:04d}" / f"n{n}"
            if not (d / "done").exists():
                backend = backend or open_backend(
                    cfg.model.model_copy(update={"path": str(model)}), cfg.rollout
                )
                samples = load_episode_inputs(run / "synth" / "eval.parquet", nframes=n)
                evaluate(
                    samples, backend, settings, modes=list(modes), out=d, workers=cfg.eval.workers
                )
                (d / "done").write_text("")
            results = load_results(d / "results.jsonl")
            rows += [
                {"id": r.id, "mode": r.mode, "nframes": n, "score": r.score, "task": r.task}
                for r in results
            ]
            at4 += results if n == 4 else []
    finally:
        if backend is not None:
            asyncio.run(backend.generator.aclose())  # ends the replica processes
    checks = cold_start_task_checks(rows, {}, metrics)
    acc = {
        f"{m}@{n}": sum(r["score"] for r in rows if r["mode"] == m and r["nframes"] == n)
        / max(1, sum(1 for r in rows if r["mode"] == m and r["nframes"] == n))
        for n, modes in PLAN
        for m in modes
    }
    return {
        "step": step,
        "tools_pay_at_4": checks["tools_pay_at_4"]["value"]["parallel_minus_none"],
        "overview_suffices_at_64": checks["overview_suffices_at_64"]["value"]["none64_minus_none4"],
        "acc": acc,
        "reads_reports": reads_reports(at4),
        **{k: metrics.get(k) for k in METRICS},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a base_seedS directory of a checks-only demo run")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", default="", help="comma list of SFT steps (default: every one)")
    ap.add_argument("--preset", default="demo", choices=sorted(PRESETS), help="the run's preset")
    ap.add_argument("--set", action="append", default=[], help="the run's --set overrides")
    a = ap.parse_args()
    cfg = with_config_overrides(base_config(a.run, PRESETS[a.preset]), a.set)
    want = {int(s) for s in a.steps.split(",") if s}
    sel = json.loads((a.run / "sft_strong" / "selection.json").read_text())
    metrics = {c["step"]: c["metrics"] for c in sel["candidates"]}
    table = []
    for step, model in sft_checkpoints(a.run / "sft_strong"):
        if not want or step in want:
            row = candidate_row(cfg, a.run, a.out, step, model, metrics.get(step, {}))
            row["chosen"] = step == sel["chosen_step"]
            table.append(row)
            print(json.dumps(row), flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "table.json").write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
