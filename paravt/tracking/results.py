"""A finished result (an eval, `paravt repro`'s summary) as a tracker run of its own, in the same
group and store as the training stages: its numbers as metrics at step 0, its lists as tables
(MLflow table artifacts, wandb tables, TensorBoard text).

A result run is written once per content: ``RUN_DIR/tracked.json`` keeps a digest of what was
logged, so a rerun that skips every stage logs nothing again, and a changed result (more seeds)
is a new run."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from paravt.tracking.fanout import Trackers
from paravt.tracking.settings import TrackingSettings

MARKER = "tracked.json"
Table = tuple[list[str], list[list[Any]]]


def log_result_run(
    run_dir: str | Path,
    s: TrackingSettings,
    *,
    run_name: str,
    metrics: Mapping[str, Any],
    tables: Mapping[str, Table] | None = None,
) -> bool:
    """Log ``metrics`` (flattened to ``a/b/c`` numbers) and ``tables`` as the run ``run_name`` in
    the directory ``run_dir``; False when no tracker is listed or this content was logged
    before."""
    if not s.trackers:
        return False
    run_dir = Path(run_dir)
    flat = dict(flatten(metrics))
    digest = hashlib.sha256(
        json.dumps([run_name, flat, tables or {}], sort_keys=True, default=str).encode()
    ).hexdigest()
    marker = run_dir / MARKER
    if marker.exists() and _logged_digest(marker) == digest:
        return False
    run_dir.mkdir(parents=True, exist_ok=True)
    t = Trackers.open(run_dir, replace(s, run_name=run_name), config=None, resume=False)
    try:
        t.log(0, flat)
        t.log_tables(0, tables or {})
    except BaseException:
        t.close("FAILED")
        raise
    t.close()
    marker.write_text(json.dumps({"digest": digest, "run_name": run_name}), encoding="utf-8")
    return True


def _logged_digest(marker: Path) -> str | None:
    try:
        value = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value.get("digest") if isinstance(value, dict) else None


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    """The finite numbers (bools as 0/1) under ``value``, keyed by their path joined with '/'."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from flatten(v, f"{prefix}/{k}" if prefix else str(k))
    elif isinstance(value, bool):
        yield prefix, float(value)
    elif isinstance(value, (int, float)) and math.isfinite(value):
        yield prefix, float(value)


def records_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """Rows of dicts as one table: the union of their keys, nested values as JSON text."""
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return columns, [[_cell(r.get(c)) for c in columns] for r in rows]


def keyed_table(by_name: Mapping[str, Any], key: str = "name") -> Table:
    """``{name: {field: value}}`` as a table: a row per name, a column per flattened number."""
    flat = {
        name: dict(flatten(v if isinstance(v, Mapping) else {"value": v}))
        for name, v in by_name.items()
    }
    columns = list(dict.fromkeys(k for v in flat.values() for k in v))
    rows = [[name, *(v.get(c) for c in columns)] for name, v in flat.items()]
    return [key, *columns], rows


def _cell(v: Any) -> Any:
    if v is None or isinstance(v, (str, bool, int)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    return json.dumps(v, default=str)
