"""MLVU (dev set, multiple-choice tasks).

Layout: ``json/*.json`` (also ``MLVU/json``): ``video``, ``duration``, ``question``,
``candidates``, ``answer`` (text), ``question_type``; videos ``video/<json stem>/<video>``.
Tasks without candidates (generation tasks) are skipped. Scoring: lmms-eval's letter extraction,
exact match; the headline is the macro average over lmms-eval's fixed task-type set (a type with
no answered question counts 0, as there), the micro accuracy alongside.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean

from paravt.errors import DataError
from paravt.eval.benchmarks.base import (
    Benchmark,
    EvalSample,
    Groups,
    ScoredItem,
    by_group,
    letter_rule,
    pct,
    table1_column,
)
from paravt.eval.benchmarks.loading import LETTERS, first, lettered, video_path

#: lmms-eval's ``mlvu_dev`` task-type set (the macro average divides by its size).
MLVU_TASK_TYPES: tuple[str, ...] = (
    "anomaly_reco",
    "count",
    "ego",
    "needle",
    "order",
    "plotQA",
    "topic_reasoning",
)


def load_mlvu(root: Path) -> list[EvalSample]:
    jdir = first(root, ["json", "MLVU/json"])
    if jdir is None or not any(jdir.glob("*.json")):
        raise DataError(
            f"mlvu: no json/*.json under {root}; download MLVU (json/ and video/) into it"
        )
    out = []
    for ann in sorted(jdir.glob("*.json")):
        for i, r in enumerate(json.loads(ann.read_text())):
            cands = r.get("candidates")
            if not cands:
                continue  # generation tasks (summary, sub-scene captioning) are not MCQ
            cands = [str(c) for c in cands]
            if str(r["answer"]) not in cands:
                raise DataError(
                    f"mlvu {ann.name} item {i}: answer {r['answer']!r} is not among candidates "
                    f"{cands}"
                )
            out.append(
                EvalSample(
                    id=f"{ann.stem}-{i}",
                    benchmark="mlvu",
                    video=str(
                        video_path(jdir.parent, [f"video/{ann.stem}", "video"], str(r["video"]))
                    ),
                    question=str(r["question"]),
                    task="mcq",
                    answer=LETTERS[cands.index(str(r["answer"]))],
                    options=lettered(cands),
                    duration=float(r["duration"]) if r.get("duration") else None,
                    subset=str(r.get("question_type", ann.stem)),
                )
            )
    return out


def groups(s: EvalSample) -> Groups:
    """lmms-eval's task type: the json file's name without its "N_" prefix."""
    stem = s.id.rsplit("-", 1)[0]
    return {"task_type": stem.split("_", 1)[1] if stem[:1].isdigit() and "_" in stem else stem}


def aggregate(items: Sequence[ScoredItem]) -> dict[str, object]:
    per = by_group(items, "task_type")
    macro = [(per.get(t) or {}).get("acc") or 0.0 for t in MLVU_TASK_TYPES]
    return {
        "by_task_type": per,
        "micro": pct([it.scored.score for it in items]),
        "missing_task_types": [t for t in MLVU_TASK_TYPES if t not in per],
        "headline": fmean(macro),
        "headline_metric": "macro acc over task types",
    }


MLVU = Benchmark(
    "mlvu", load_mlvu, letter_rule, aggregate, groups, table1=table1_column("MLVU", 58.3, 65.0)
)
