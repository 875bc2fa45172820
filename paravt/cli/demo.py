"""`paravt demo [--out runs/demo] [--quick]`."""

from __future__ import annotations

from pathlib import Path

import typer


def demo(out: Path = typer.Option(Path("runs/demo"), "--out"),
         quick: bool = typer.Option(False, "--quick", help="Minutes-scale smoke run (used by the tests)")) -> None:
    """`paravt repro` on the demo preset: SFT cold start vs vanilla GRPO vs PARA-GRPO, eval × modes, report."""
    from paravt.demo import run_demo

    run_demo(out, quick=quick)
