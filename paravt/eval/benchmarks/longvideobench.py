"""LongVideoBench (validation set).

Layout: ``lvb_val.json``: ``id``, ``video_path``, ``duration``, ``question``, ``candidates``,
``correct_choice`` (int), ``question_category``; videos ``videos/<video_path>``. Scoring:
lmms-eval's ``longvideobench`` rule, whose unreadable answers draw a random letter (seeded here
by (seed, item id), so a resumed or reordered run draws the same); micro accuracy, by duration
group and question category.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

from paravt.eval.benchmarks import lmms_rules as L
from paravt.eval.benchmarks.base import (
    Benchmark,
    EvalSample,
    Groups,
    Scored,
    ScoredItem,
    by_group,
    micro_accuracy,
    option_letters,
    table1_column,
)
from paravt.eval.benchmarks.loading import LETTERS, lettered, need, video_path


def load_longvideobench(root: Path) -> list[EvalSample]:
    ann = need(root, "longvideobench", ["lvb_val.json", "**/lvb_val.json"])
    out = []
    for r in json.loads(ann.read_text()):
        out.append(
            EvalSample(
                id=str(r["id"]),
                benchmark="longvideobench",
                video=str(video_path(root, ["videos", "."], str(r["video_path"]))),
                question=str(r["question"]),
                task="mcq",
                answer=LETTERS[int(r["correct_choice"])],
                options=lettered(list(r["candidates"])),
                duration=float(r["duration"]) if r.get("duration") is not None else None,
                subset=str(r.get("duration_group", r.get("question_category", ""))),
                meta={
                    "question_category": r.get("question_category"),
                    "duration_group": r.get("duration_group"),
                },
            )
        )
    return out


def rule(
    text: str, answer: str, options: Sequence[str] | None, *, item_id: str, seed: int
) -> Scored:
    rng = random.Random(f"{seed}:{item_id}")
    pred, was_random = L.parse_lvb_response(text, option_letters(options) or list("ABCDE"), rng)
    return Scored(pred, float(pred == answer), was_random)


def groups(s: EvalSample) -> Groups:
    return {
        "duration_group": str(s.meta.get("duration_group", "")),
        "question_category": str(s.meta.get("question_category") or ""),
    }


def aggregate(items: Sequence[ScoredItem]) -> dict[str, object]:
    return {
        "by_duration_group": by_group(items, "duration_group"),
        "by_question_category": by_group(items, "question_category"),
        **micro_accuracy(items),
    }


LONGVIDEOBENCH = Benchmark(
    "longvideobench",
    load_longvideobench,
    rule,
    aggregate,
    groups,
    table1=table1_column("LongVideoBench", 52.2, 60.4),
)
