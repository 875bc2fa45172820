"""A Table-1-style table: our benchmark runs beside the paper's quoted reference rows.

Our rows come from the ``benchmark`` section of each ``metrics.json`` that
``paravt eval --benchmark`` wrote (``OUT/<benchmark>/<prompt class>/metrics.json``): one row per
(run directory ``OUT``, prompt class, dispatch mode), one column per benchmark, the headline in
the paper's units under the run's scoring. The reference rows are the ParaVT paper's Table 1
(unified 64-frame protocol; Charades-STA in mIoU), copied from /work/shared/PAPER.md into each
benchmark's ``table1`` column (its module) and labelled "paper (quoted)": they were not measured
here. The columns are the registered benchmarks that have a Table 1 column.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paravt.eval.benchmarks.registry import REGISTRY

QUOTED = "paper (quoted)"


def columns() -> tuple[tuple[str, str], ...]:
    """(benchmark, column title) of every registered benchmark with a Table 1 column, in registry
    order."""
    return tuple((b.name, b.table1.title) for b in REGISTRY.values() if b.table1 is not None)


@dataclass(frozen=True)
class Table1Row:
    label: str
    source: str  # "measured" | "paper (quoted)"
    values: dict[
        str, Any
    ]  # float | None; a measured file's value as found (`num` shows a non-number as malformed)
    n: dict[str, Any] = field(default_factory=dict)  # questions behind each measured value (an int)
    scoring: str = ""


def paper_rows() -> list[Table1Row]:
    """[paper] ParaVT Table 1's reference rows, one per quoted model (values from each
    benchmark's ``table1`` column; PAPER.md "ParaVT — results to compare against")."""
    values: dict[str, dict[str, float | None]] = {}
    for b in REGISTRY.values():
        for model, v in b.table1.paper.items() if b.table1 is not None else ():
            values.setdefault(model, {})[b.name] = v
    return [Table1Row(model, QUOTED, v) for model, v in values.items()]


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
        pc = str(_obj(bench.get("protocol")).get("prompt_class", "?"))
        for mode, d in _obj(bench["by_mode"]).items():
            if not isinstance(d, dict):
                continue
            key = (run, pc, str(mode), str(d.get("scoring", "")))
            row = rows.setdefault(
                key, Table1Row(f"{run} · {pc} · {mode}", "measured", {}, {}, key[3])
            )
            row.values[str(bench.get("name"))] = d.get(
                "headline"
            )  # rendered by `num`: malformed if not a number
            row.n[str(bench.get("name"))] = _obj(d.get(str(d.get("scoring", "lmms")))).get("n", 0)
    return list(rows.values())


def _obj(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def table1_rows(metrics_files: Sequence[Path]) -> list[Table1Row]:
    """The paper's reference rows first, then ours."""
    return [*paper_rows(), *measured_rows(metrics_files)]
