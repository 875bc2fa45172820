"""The runs a report shows: training runs (``run.json`` and/or ``train_log.jsonl``) and eval runs
(``results.jsonl``, with ``metrics.json`` as fallback) found under the given directories, each
named once. An unreadable file is a note on its run, never an exception (issue 34)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from paravt.errors import DataError
from paravt.eval.metrics import compute_metrics
from paravt.eval.results import ResultRow, read_results
from paravt.jsonl import read_jsonl


@dataclass(frozen=True)
class TrainRun:
    name: str
    path: Path
    kind: str
    log: tuple[dict[str, Any], ...]
    note: str | None = None  # why run.json was not read (shown on the run)


@dataclass(frozen=True)
class EvalRun:
    name: str
    path: Path
    rows: tuple[ResultRow, ...]
    metrics: dict[str, Any]
    malformed: tuple[
        str, ...
    ] = ()  # results.jsonl rows off the schema, and why (shown, not raised)


@dataclass(frozen=True)
class Discovered:
    train: tuple[TrainRun, ...]
    evals: tuple[EvalRun, ...]


def _label(d: Path, root: Path) -> str:
    rel = d.relative_to(root)
    return root.name if rel == Path(".") else f"{root.name}/{rel.as_posix()}"


def _json_object(path: Path) -> tuple[dict[str, Any], str | None]:
    """``path``'s JSON object, or ({}, why not) when it is missing a whole object."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError) as e:
        return {}, f"{path} could not be read ({e})"
    return (obj, None) if isinstance(obj, dict) else ({}, f"{path} is not a JSON object")


def _train_run(d: Path, root: Path) -> TrainRun:
    meta, note = _json_object(d / "run.json") if (d / "run.json").exists() else ({}, None)
    name = str(meta.get("name") or _label(d, root))
    return TrainRun(
        name, d, str(meta.get("kind", "?")), tuple(read_jsonl(d / "train_log.jsonl")), note
    )


def _eval_run(d: Path, root: Path) -> EvalRun:
    read = read_results(d / "results.jsonl")
    malformed = read.malformed
    if read.rows:
        met = compute_metrics(list(read.rows))
    else:
        met, note = (
            _json_object(d / "metrics.json") if (d / "metrics.json").exists() else ({}, None)
        )
        malformed += (note,) if note else ()
    parent_meta = d.parent / "run.json"
    name = _label(d, root)
    if parent_meta.exists() and d != root:
        name = f"{_json_object(parent_meta)[0].get('name', d.parent.name)}/{d.name}"
    return EvalRun(name, d, read.rows, met, malformed)


def _unique(names: list[str], paths: list[Path]) -> list[str]:
    """Each run's name, or where names repeat (every RL seed of `paravt repro` is "seed0") its
    path under the common root; a number only when even those repeat."""
    counts = {n: names.count(n) for n in names}
    root = Path(os.path.commonpath([str(p) for p in paths])) if len(paths) > 1 else None
    picked = [
        n if counts[n] == 1 or root is None else p.relative_to(root).as_posix() or n
        for n, p in zip(names, paths)
    ]
    seen: dict[str, int] = {}
    out = []
    for n in picked:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n} ({seen[n]})")
    return out


def discover(run_dirs: Sequence[Path]) -> Discovered:
    """Training and eval runs under ``run_dirs`` (searched recursively, each dir once)."""
    train, evals = [], []
    seen: set[Path] = set()
    for root in (Path(p).resolve() for p in run_dirs):
        if not root.is_dir():
            raise DataError(
                f"run directory {root} does not exist; pass a directory written by paravt "
                "train/eval"
            )
        dirs = sorted(
            {
                p.parent
                for pat in ("run.json", "train_log.jsonl", "results.jsonl", "metrics.json")
                for p in root.rglob(pat)
            }
        )
        for d in dirs:
            if d in seen:
                continue
            seen.add(d)
            if (d / "run.json").exists() or (d / "train_log.jsonl").exists():
                train.append(_train_run(d, root))
            if (d / "results.jsonl").exists() or (d / "metrics.json").exists():
                evals.append(_eval_run(d, root))
    tn = _unique([t.name for t in train], [t.path for t in train])
    en = _unique([e.name for e in evals], [e.path for e in evals])
    return Discovered(
        tuple(replace(t, name=n) for n, t in zip(tn, train)),
        tuple(replace(e, name=n) for n, e in zip(en, evals)),
    )
