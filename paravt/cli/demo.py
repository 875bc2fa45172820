"""`paravt demo [--out runs/demo] [--quick]`."""

from __future__ import annotations

from pathlib import Path

import typer


def demo(out: Path = typer.Option(Path("runs/demo"), "--out"),
         quick: bool = typer.Option(False, "--quick", help="Minutes-scale smoke run (used by the tests)")) -> None:
    """ParaVT-Synth → tiny Qwen3-VL → SFT → PARA-GRPO vs vanilla GRPO → eval × modes → report."""
    from paravt.demo import run_demo

    run_demo(out, quick=quick)
