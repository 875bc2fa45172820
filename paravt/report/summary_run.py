"""A repro run's report as an artifact of its summary run (the layer above ``repro``: the report
reads every stage's files, so it is built once the run has written them)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console


def report_to_summary_run(out: Path, console: Console) -> Path | None:
    """With a tracker listed for ``out``'s summary run: ``OUT/report.html`` (`paravt report`'s
    page) built and attached to that run; returns its path. Nothing without a tracker. A report
    that cannot be built is one warning line; summary.json stands."""
    from paravt.errors import ParavtError
    from paravt.report.page import build_report
    from paravt.repro.tracked import SUMMARY_DIR, attach_summary_report
    from paravt.tracking import STATE_FILE

    if not (out / SUMMARY_DIR / STATE_FILE).is_file():
        return None
    try:
        report = build_report([out], out / "report.html")
    except (ParavtError, OSError) as err:
        console.print(
            f"[yellow]warning:[/yellow] report.html not built ({err}); summary.json stands"
        )
        return None
    attach_summary_report(out, report)
    console.print(f"[bold green]report:[/bold green] {report} (in the summary run)", soft_wrap=True)
    return report
