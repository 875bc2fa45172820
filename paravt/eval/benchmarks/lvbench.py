"""LVBench.

Layout: ``video_info.meta.jsonl`` (also under ``data/``): per video ``key``, ``type`` and
``qa`` = [{``uid``, ``question`` with "\\n(A) …" options, ``answer``, ``question_type``,
``time_reference``}]; videos ``videos/<key>.mp4`` (or ``all_videos/``). Scoring: lmms-eval's
letter extraction, exact match; micro accuracy, by question type (a question may have several)
and video type.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from paravt.eval.benchmarks.base import (
    Benchmark,
    EvalSample,
    Groups,
    ScoredItem,
    by_group,
    letter_rule,
    micro_accuracy,
    table1_column,
)
from paravt.eval.benchmarks.loading import need, video_path

_LV_OPT = re.compile(r"\n\(([A-J])\)\s*")


def load_lvbench(root: Path) -> list[EvalSample]:
    ann = need(
        root,
        "lvbench",
        ["video_info.meta.jsonl", "data/video_info.meta.jsonl", "**/video_info.meta.jsonl"],
    )
    out = []
    for line in ann.read_text().splitlines():
        if not line.strip():
            continue
        v = json.loads(line)
        key = str(v["key"])
        video = video_path(root, ["videos", "all_videos", "video"], f"{key}.mp4")
        minutes = (v.get("video_info") or {}).get("duration_minutes")
        for qa in v["qa"]:
            pieces = _LV_OPT.split(str(qa["question"]))  # [stem, "A", text, "B", text, ...]
            options = tuple(
                f"{pieces[i]}. {pieces[i + 1].strip()}" for i in range(1, len(pieces) - 1, 2)
            )
            out.append(
                EvalSample(
                    id=str(qa["uid"]),
                    benchmark="lvbench",
                    video=str(video),
                    question=pieces[0].strip(),
                    task="mcq",
                    answer=str(qa["answer"]).strip(),
                    options=options or None,
                    duration=float(minutes) * 60 if minutes is not None else None,
                    subset=str(v.get("type", "")),
                    meta={
                        "question_type": qa.get("question_type"),
                        "time_reference": qa.get("time_reference"),
                    },
                )
            )
    return out


def groups(s: EvalSample) -> Groups:
    qt = s.meta.get("question_type") or ()
    return {
        "question_type": tuple(qt) if isinstance(qt, list | tuple) else (str(qt),),
        "video_type": s.subset,
    }


def aggregate(items: Sequence[ScoredItem]) -> dict[str, object]:
    return {
        "by_question_type": by_group(items, "question_type"),
        "by_video_type": by_group(items, "video_type"),
        **micro_accuracy(items),
    }


LVBENCH = Benchmark(
    "lvbench",
    load_lvbench,
    letter_rule,
    aggregate,
    groups,
    table1=table1_column("LVBench", 33.1, 39.8),
)
