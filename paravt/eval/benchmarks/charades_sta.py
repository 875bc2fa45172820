"""Charades-STA (test set): temporal grounding.

Layout: ``charades_sta_test.txt`` lines ``VID start end##sentence``; durations from
``Charades_v1_test.csv`` (``id``…``length``) when present; videos ``Charades_v1_480/<VID>.mp4``
(or ``videos/``, ``Charades_v1/``). Scoring: lmms-eval's ``charades_sta`` rule (exactly one time
range read from the response, IoU with the ground truth); lmms-eval keys predictions by (video,
sentence, interval), so exact duplicates count once; R@0.3/0.5/0.7 and mIoU (the headline).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from paravt.errors import DataError
from paravt.eval.benchmarks import lmms_rules as L
from paravt.eval.benchmarks.base import (
    Benchmark,
    EvalSample,
    Scored,
    ScoredItem,
    fmt_interval,
    no_groups,
    pct,
    table1_column,
)
from paravt.eval.benchmarks.loading import first, need, video_path
from paravt.rewards.accuracy import parse_interval

RECALLS: tuple[float, ...] = (0.3, 0.5, 0.7)


def load_charades_sta(root: Path) -> list[EvalSample]:
    ann = need(root, "charades_sta", ["charades_sta_test.txt", "**/charades_sta_test.txt"])
    lengths: dict[str, float] = {}
    meta_csv = first(root, ["Charades_v1_test.csv", "**/Charades_v1_test.csv"])
    if meta_csv is not None:
        with meta_csv.open(newline="") as f:
            lengths = {
                row["id"]: float(row["length"]) for row in csv.DictReader(f) if row.get("length")
            }
    out = []
    for i, line in enumerate(ann.read_text().splitlines()):
        if "##" not in line:
            continue
        head, sentence = line.split("##", 1)
        vid, s, e = head.split()
        sentence = sentence.strip().rstrip(".")
        out.append(
            EvalSample(
                id=f"charades-{i}",
                benchmark="charades_sta",
                video=str(
                    video_path(root, ["Charades_v1_480", "videos", "Charades_v1"], f"{vid}.mp4")
                ),
                # "start - end", as lmms-eval's Charades prompt asks: its parser cannot read "[a,
                # b]"
                question=f'When does "{sentence}" happen in the video? Answer with its start and '
                "end time in "
                'seconds, as "start - end".',
                task="tvg",
                answer=f"[{float(s):.1f}, {float(e):.1f}]",
                duration=lengths.get(vid),
                subset="charades",
                meta={"sentence": sentence},  # the release's protocol asks in its own words
            )
        )
    return out


def _gt_interval(answer: str) -> tuple[float, float]:
    iv = parse_interval(answer)
    if iv is None:
        raise DataError(
            f"charades_sta answer {answer!r} is not an interval; expected '[start, end]' in seconds"
        )
    return iv


def rule(
    text: str, answer: str, options: Sequence[str] | None, *, item_id: str, seed: int
) -> Scored:
    found = L.extract_time(text)
    if len(found) != 1:
        return Scored("", 0.0)
    (a, b), gt = found[0], _gt_interval(answer)
    return Scored(fmt_interval(a, b), L.lmms_iou(gt, (a, b)))


def aggregate(items: Sequence[ScoredItem]) -> dict[str, object]:
    keyed = {(it.key or it.id): it for it in items}  # lmms-eval merges duplicate keys, last wins
    ious = [it.scored.score for it in keyed.values()]
    out: dict[str, object] = {"headline": pct(ious), "headline_metric": "mIoU"}
    out.update({f"R@{k}": pct([1.0 if x >= k else 0.0 for x in ious]) for k in RECALLS})
    out.update(
        mIoU=pct(ious),
        n_scored=len(ious),
        no_interval=sum(1 for it in keyed.values() if not it.scored.pred),
    )
    return out


CHARADES_STA = Benchmark(
    "charades_sta",
    load_charades_sta,
    rule,
    aggregate,
    no_groups,
    answer_kind="interval",
    table1=table1_column("Charades-STA mIoU", 49.3, 50.1),
    content_key=True,
)
