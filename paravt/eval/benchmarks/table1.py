"""A Table-1-style table: our benchmark runs beside the paper's quoted reference rows.

Our rows come from the ``benchmark`` section of each ``metrics.json`` that
``paravt eval --benchmark`` wrote (``OUT/<benchmark>/<prompt class>/metrics.json``): one row per
(run directory ``OUT``, prompt class, dispatch mode), one column per benchmark, the headline in
the paper's units under the run's scoring. The reference rows are the ParaVT paper's Table 1
(unified 64-frame protocol; Charades-STA in mIoU), copied from /work/shared/PAPER.md and labelled
"paper (quoted)": they were not measured here.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COLUMNS: tuple[tuple[str, str], ...] = (
    ("videomme", "VideoMME"), ("videomme_sub", "VideoMME w/ sub"), ("longvideobench", "LongVideoBench"),
    ("lvbench", "LVBench"), ("mlvu", "MLVU"), ("mmvu", "MMVU"), ("charades_sta", "Charades-STA mIoU"),
)
_PAPER_ORDER = tuple(k for k, _ in COLUMNS)
#: [paper] ParaVT Table 1 (PAPER.md "ParaVT — results to compare against").
PAPER_TABLE1: dict[str, dict[str, float]] = {
    "Qwen3-VL-8B": dict(zip(_PAPER_ORDER, (59.9, 68.4, 52.2, 33.1, 58.3, 68.0, 49.3), strict=True)),
    "ParaVT-8B": dict(zip(_PAPER_ORDER, (62.1, 69.4, 60.4, 39.8, 65.0, 68.6, 50.1), strict=True)),
}
QUOTED = "paper (quoted)"


@dataclass(frozen=True)
class Table1Row:
    label: str
    source: str  # "measured" | "paper (quoted)"
    values: dict[str, float | None]
    n: dict[str, int] = field(default_factory=dict)  # questions behind each measured value
    scoring: str = ""


def paper_rows() -> list[Table1Row]:
    return [Table1Row(name, QUOTED, dict(v)) for name, v in PAPER_TABLE1.items()]


def _load(path: Path) -> dict[str, Any] | None:
    try:
        bench = json.loads(path.read_text(encoding="utf-8")).get("benchmark")
    except (OSError, ValueError, AttributeError):
        return None
    return bench if isinstance(bench, dict) and "by_mode" in bench else None


def measured_rows(metrics_files: Sequence[Path]) -> list[Table1Row]:
    """One row per (run dir, prompt class, mode) over the given ``metrics.json`` files; files
    without a ``benchmark`` section are skipped."""
    rows: dict[tuple[str, str, str, str], Table1Row] = {}
    for path in sorted(set(metrics_files)):
        bench = _load(path)
        if bench is None:
            continue
        run = path.parent.parent.parent.name or str(path.parent.parent.parent)
        pc = str(bench.get("protocol", {}).get("prompt_class", "?"))
        for mode, d in bench["by_mode"].items():
            key = (run, pc, mode, str(d.get("scoring", "")))
            row = rows.setdefault(key, Table1Row(f"{run} · {pc} · {mode}", "measured", {}, {}, key[3]))
            row.values[str(bench["name"])] = d.get("headline")
            row.n[str(bench["name"])] = int((d.get(d.get("scoring", "lmms")) or {}).get("n", 0))
    return list(rows.values())


def table1_rows(metrics_files: Sequence[Path]) -> list[Table1Row]:
    """The paper's reference rows first, then ours."""
    return [*paper_rows(), *measured_rows(metrics_files)]


def table1_html(rows: Sequence[Table1Row]) -> str:
    if not any(r.source == "measured" for r in rows):
        note = '<p class="muted">No benchmark runs found (run paravt eval --benchmark); paper rows only.</p>'
    else:
        note = ('<p class="muted">Measured cells: headline in the paper\'s units under the run\'s scoring '
                '(lmms = lmms-eval task rules), with the number of questions. Paper rows are quoted from '
                'ParaVT Table 1 (64-frame protocol), not measured.</p>')
    head = "<tr><th class='l'>model / run</th><th class='l'>source</th>" + "".join(
        f"<th>{html.escape(t)}</th>" for _, t in COLUMNS) + "</tr>"
    body = []
    for r in rows:
        cells = []
        for k, _ in COLUMNS:
            v = r.values.get(k)
            n = f" <span class='muted'>(n={r.n[k]})</span>" if k in r.n else ""
            cells.append(f"<td>{'–' if v is None else f'{v:.1f}'}{n}</td>")
        src = r.source + (f", {r.scoring}" if r.scoring else "")
        body.append(f"<tr><td class='l'>{html.escape(r.label)}</td><td class='l'>{html.escape(src)}</td>"
                    + "".join(cells) + "</tr>")
    return f'<table id="table1">{head}{"".join(body)}</table>{note}'
