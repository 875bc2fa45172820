"""`paravt demo`: the method end to end on the CPU, every number measured in this run.

It is `paravt repro` (``paravt.repro.run``) on the ``demo`` preset with three of its variants: the
SFT cold start, vanilla GRPO and PARA-GRPO (``SEEDS`` RL seeds each), all from the same measured
early checkpoint of an SFT run on top of a simulated strong tool prior; then the HTML report (with
its "paper vs ours"
section). The CLI prints the comparison. ``--quick`` is the ``micro`` preset (the test suite's:
every stage runs, the numbers are noise).

Re-running with the same ``--out`` continues stage by stage (a finished stage is skipped, trainings
resume from their last checkpoint, evals by sample id). Delete the folder to start over.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

VARIANTS = "sft,vanilla_grpo,paragrpo"
SEEDS = 3  # RL seeds of the demo: its verdict uses intervals over seeds (--quick: 1)


def run_demo(out: Path, *, quick: bool = False, overrides: Sequence[str] = ()) -> tuple[Path, Path]:
    """Run every stage; return the paths of report.html and summary.json. ``overrides``: `--set`
    strings for every stage (``paravt.repro.run.run_repro``), e.g. model.device=cuda on a GPU."""
    from paravt.report.page import build_report
    from paravt.repro.run import run_repro
    from paravt.tracking import attach_report

    summary = run_repro(
        out,
        preset="micro" if quick else "demo",
        seeds=1 if quick else SEEDS,
        variants=VARIANTS,
        overrides=overrides,
    )
    report = build_report([out], out / "report.html")
    attach_report(
        [out], report
    )  # to each training run's wandb / MLflow run, when logging.loggers lists them
    return report, summary
