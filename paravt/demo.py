"""`paravt demo`: the method end to end on the CPU, every number measured in this run.

It is `paravt repro` (``paravt.repro.run``) on the ``demo`` preset with three of its variants: the
SFT cold start, vanilla GRPO and PARA-GRPO, all from the same measured early checkpoint of an SFT
run on top of a simulated strong tool prior; then the HTML report (with its "paper vs ours"
section) and the comparison printed in the terminal. ``--quick`` is the ``micro`` preset (the test
suite's: every stage runs, the numbers are noise).

Re-running with the same ``--out`` continues stage by stage (a finished stage is skipped, trainings
resume from their last checkpoint, evals by sample id). Delete the folder to start over.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

console = Console()
VARIANTS = "sft,vanilla_grpo,paragrpo"


def run_demo(out: Path, *, quick: bool = False) -> Path:
    """Run every stage; return the path of report.html."""
    from paravt.eval.report import build_report
    from paravt.repro.run import run_repro
    from paravt.repro.table import print_summary

    summary = run_repro(out, preset="micro" if quick else "demo", seeds=1, variants=VARIANTS)
    report = build_report([out], out / "report.html")
    print_summary(json.loads(summary.read_text()), console)
    console.print(f"[bold green]report:[/bold green] {report}", soft_wrap=True)
    return report
