"""`paravt report RUN_DIR... [--out report.html]`: one self-contained HTML report."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from paravt.errors import ParavtError
from paravt.eval.report import build_report

console = Console(stderr=True)


def report(
    run_dirs: list[Path] = typer.Argument(..., help="Run, eval or demo directories (searched recursively)."),
    out: Path = typer.Option(Path("report.html"), "--out", "-o", help="HTML file to write."),
) -> None:
    """Training curves, eval table, accuracy by n, tokens vs K and transcripts in one HTML file."""
    try:
        path = build_report(run_dirs, out)
    except ParavtError as err:
        console.print(f"[red]{err}[/red]")
        raise typer.Exit(2) from None
    typer.echo(str(path))
