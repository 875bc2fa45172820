"""`paravt report RUN_DIR... [--out report.html]`: one self-contained HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table
from rich.text import Text

from paravt.cli.output import stderr_console, stdout_console

if TYPE_CHECKING:
    from paravt.eval.benchmarks.table1 import Table1Row

console = stderr_console()


def report(
    run_dirs: list[Path] = typer.Argument(
        ..., help="Run, eval or demo directories (searched recursively)."
    ),
    out: Path = typer.Option(Path("report.html"), "--out", "-o", help="HTML file to write."),
) -> None:
    """Training curves, eval table, accuracy by n, tokens vs K and transcripts in one HTML file; for
    a `paravt repro` directory also the paper's Table 2/5 beside ours, dynamics over seeds and
    claims."""
    from paravt.eval.benchmarks.table1 import table1_rows
    from paravt.report.page import build_report
    from paravt.tracking import attach_report

    path = build_report(run_dirs, out)
    attach_report(
        run_dirs, path
    )  # to the wandb / MLflow runs of the training runs found (tracking.json)
    rows = table1_rows([p for d in run_dirs for p in Path(d).rglob("metrics.json")])
    if any(r.source == "measured" for r in rows):
        stdout_console().print(table1_table(rows))
    typer.echo(str(path))


def table1_table(rows: list[Table1Row]) -> Table:
    """Our benchmark rows beside the paper's quoted Table 1 rows (rich, for the terminal)."""
    t = Table(title="benchmarks vs the paper's Table 1 (paper rows quoted, not measured)")
    t.add_column("model / run")
    t.add_column("source")
    from paravt.eval.benchmarks.table1 import columns

    cols = columns()
    for _, title in cols:
        t.add_column(title, justify="right")
    for r in rows:  # Text: a label is shown as written, never read as rich markup
        src = r.source + (f", {r.scoring}" if r.scoring else "")
        t.add_row(Text(r.label), Text(src), *(_cell(r.values.get(k)) for k, _ in cols))
    return t


def _cell(v: object) -> Text:
    """A headline as a number with one decimal, "–" when absent, "malformed" when not a number."""
    if v is None:
        return Text("–")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return Text("malformed", style="red")
    return Text(f"{v:.1f}")
