"""`paravt report RUN_DIR... [--out report.html]`: one self-contained HTML report."""

from __future__ import annotations

from pathlib import Path

import typer

from paravt.errors import ParavtError
from paravt.eval.report import build_report
from paravt.cli.output import fail, stderr_console

console = stderr_console()


def report(
    run_dirs: list[Path] = typer.Argument(..., help="Run, eval or demo directories (searched recursively)."),
    out: Path = typer.Option(Path("report.html"), "--out", "-o", help="HTML file to write."),
) -> None:
    """Training curves, eval table, accuracy by n, tokens vs K and transcripts in one HTML file."""
    try:
        path = build_report(run_dirs, out)
    except ParavtError as err:
        raise fail(str(err)) from None
    typer.echo(str(path))
