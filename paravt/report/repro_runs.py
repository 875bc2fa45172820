"""A `paravt repro` output directory read as data (``eval`` sits below ``repro`` in the layers):
its ``summary.json`` and each variant's per-seed ``train_log.jsonl``. A directory is a repro run
when its summary holds ``"variants"`` and ``"claims"`` (docs/repro.md); an unreadable summary next
to repro stage markers is still one, with a note."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paravt.jsonl import read_jsonl

SUMMARY = "summary.json"
_STAGE_MARKER = ".repro-stage-done"


@dataclass(frozen=True)
class ReproRun:
    path: Path
    summary: dict[str, Any]  # {} when unreadable (``note`` says why)
    logs: dict[str, list[list[dict[str, Any]]]] = field(
        default_factory=dict
    )  # variant → one log per seed
    note: str | None = None


def get(d: Any, *keys: str) -> Any:
    """``d[k1][k2]…`` or None where a level is missing or not a mapping."""
    for k in keys:
        if not isinstance(d, Mapping) or k not in d:
            return None
        d = d[k]
    return d


def _seed_logs(path: Path) -> dict[str, list[list[dict[str, Any]]]]:
    out: dict[str, list[list[dict[str, Any]]]] = {}
    for vdir in sorted(p for p in path.iterdir() if p.is_dir()):
        seeds = sorted(
            vdir.glob("seed*/train_log.jsonl"),
            key=lambda f: int(m.group()) if (m := re.search(r"\d+", f.parent.name)) else -1,
        )
        logs = [log for f in seeds if (log := read_jsonl(f))]
        if logs:
            out[vdir.name] = logs
    return out


def load_run(path: Path) -> ReproRun | None:
    """The repro run at ``path``, or None when ``path`` is not one. An unreadable summary.json
    next to repro stage markers is still a repro run, with a note."""
    try:
        summary = json.loads((path / SUMMARY).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        if not any(path.glob(f"*/{_STAGE_MARKER}")):
            return None
        return ReproRun(
            path,
            {},
            _seed_logs(path),
            f"{path / SUMMARY} could not be read ({e}); tables left empty",
        )
    if (
        not isinstance(summary, dict)
        or not isinstance(summary.get("variants"), dict)
        or "claims" not in summary
    ):
        return None
    return ReproRun(path, summary, _seed_logs(path))


def find_runs(run_dirs: Sequence[Path]) -> list[ReproRun]:
    """Repro runs at or under ``run_dirs`` (each directory once)."""
    dirs = sorted(
        {f.parent.resolve() for d in run_dirs if Path(d).is_dir() for f in Path(d).rglob(SUMMARY)}
    )
    return [r for d in dirs if (r := load_run(d)) is not None]
