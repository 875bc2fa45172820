"""Resumable stages of `paravt repro`: a stage that finished leaves ``.repro-stage-done`` (holding
its wall seconds) and is skipped on the next run; ``stage_times`` lists them for
``meta.stage_s``."""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console

console = Console()
DONE = ".repro-stage-done"
_started: dict[Path, float] = {}


def start_stage(path: Path, what: str) -> bool:
    """True when ``path`` still has to run (and say which stage starts)."""
    if (path / DONE).exists():
        console.print(f"[dim]{what}: done already ({path}); skipped[/dim]")
        return False
    console.rule(f"[bold]{what}")
    path.mkdir(parents=True, exist_ok=True)
    _started[path] = time.perf_counter()
    return True


def finish_stage(path: Path, wall: float | None = None) -> None:
    """Mark a stage finished; the marker holds its wall time in seconds (``stage_times``)."""
    took = time.perf_counter() - _started.pop(path, time.perf_counter())
    (path / DONE).write_text(f"{took if wall is None else wall:.1f}\n")


def stage_times(out: Path) -> dict[str, float]:
    """Wall seconds of every finished stage under ``out``, by its path relative to ``out``."""
    times = {}
    for marker in sorted(out.rglob(DONE)):
        try:
            times[str(marker.parent.relative_to(out)) or "."] = float(marker.read_text().strip())
        except ValueError:  # a marker from before stage timing ("ok")
            continue
    return times
