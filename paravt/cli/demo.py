"""`paravt demo [--out runs/demo] [--quick]`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from paravt.cli.output import SET_HELP, stdout_console


def demo(
    out: Path = typer.Option(Path("runs/demo"), "--out"),
    quick: bool = typer.Option(
        False, "--quick", help="Minutes-scale smoke run (used by the tests)"
    ),
    set_: list[str] = typer.Option(
        None,
        "--set",
        help=SET_HELP + " Applied to the preset's config "
        "(e.g. model.device=cuda model.replicas=1 on a GPU).",
    ),
) -> None:
    """`paravt repro` on the demo preset: SFT cold start vs vanilla GRPO vs PARA-GRPO, eval × modes,
    report."""
    from paravt.demo import run_demo
    from paravt.repro.table import print_summary

    report, summary = run_demo(out, quick=quick, overrides=set_ or ())
    console = stdout_console()
    print_summary(json.loads(summary.read_text()), console)
    console.print(f"[bold green]report:[/bold green] {report}", soft_wrap=True)
