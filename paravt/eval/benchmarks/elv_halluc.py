"""ELV-Halluc scoring: yes/no answers → in-video / out-of-video accuracy and the SAH ratio.

The benchmark (Lu et al. 2025; its ``eval.py``, read, not copied) asks "Is the following caption
totally correct? Reply with 'Yes' or 'No' only." about three captions of one event: the ground
truth, an in-video hallucination (details that occur elsewhere in the same video) and an
out-of-video hallucination. A triplet is in-video correct when the model says yes to the ground
truth AND no to the in-video caption; out-of-video correct likewise. Semantic Aggregation
Hallucination ratio = (OutAcc − InAcc) / (1 − InAcc): how much more the model is fooled by
details that ARE in the video. Reported per aspect (Visual Details, Object, Action, Declarative
Content) as EVA's Table 1 does; ``avg_acc`` is the accuracy over both adversarial pairs of every
triplet, i.e. (InAcc + OutAcc) / 2. Percentages.

Layout: ``ELV_Halluc.jsonl`` (also ``data/``), one yes/no question per line, in triplets of
consecutive lines (ground_truth, in_video, out_video captions of one event), as the benchmark's
``eval.py`` reads it. Fields: ``caption_type``, ``ref_answer`` (Yes/No), ``aspect``, the question
(``question`` or ``prompt``) and the video (``video`` / ``video_path`` / ``video_id``, under
``videos/``). ELV-Halluc has no lmms-eval task: the lmms scoring is the benchmark's own yes/no
reading, and it is not a column of the ParaVT paper's Table 1.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import fmean
from typing import Any

from paravt.errors import DataError
from paravt.eval.benchmarks.base import Benchmark, EvalSample, Groups, Scored, ScoredItem
from paravt.eval.benchmarks.lmms_rules import strip_reasoning_tags
from paravt.eval.benchmarks.loading import need, video_path

CAPTION_TYPES: tuple[str, ...] = ("ground_truth", "in_video", "out_video")

ASPECTS: Mapping[str, str] = {
    "visualdetails": "Visual Details",
    "visualdetail": "Visual Details",
    "vd": "Visual Details",
    "object": "Object",
    "objects": "Object",
    "action": "Action",
    "actions": "Action",
    "declarativecontent": "Declarative Content",
    "declarative": "Declarative Content",
    "dc": "Declarative Content",
}


def yes_no(response: str) -> str | None:
    """ELV-Halluc's reading of an answer: "yes" when "yes" occurs anywhere (any case), else "no"
    when "no" does (inside words too: "I don't know" reads as no), else None. Reasoning blocks
    are stripped first (lmms-eval's default)."""
    low = strip_reasoning_tags(response or "").lower()
    if "yes" in low:
        return "yes"
    if "no" in low:
        return "no"
    return None


def aspect_name(raw: str) -> str:
    """The display name of an aspect as the data spells it ("visual_details" → Visual Details)."""
    return ASPECTS.get(re.sub(r"[^a-z]", "", raw.lower()), raw)


def sah_ratio(in_acc: float, out_acc: float) -> float | None:
    """(OutAcc − InAcc) / (1 − InAcc) for accuracies in [0, 1]; None when InAcc is 1."""
    return None if in_acc >= 1.0 else (out_acc - in_acc) / (1.0 - in_acc)


def _triplet_scores(
    items: Sequence[tuple[str, str, str, float]],
) -> tuple[list[tuple[str, int, int]], int]:
    """(aspect, in correct, out correct) per complete triplet, and the number of incomplete ones.
    ``items``: (triplet, caption_type, aspect, per-question score 0/1)."""
    by: dict[str, dict[str, tuple[str, float]]] = {}
    for trip, ctype, aspect, score in items:
        by.setdefault(trip, {})[ctype] = (aspect, score)
    out, incomplete = [], 0
    for trip in sorted(by, key=lambda t: (len(t), t)):
        t = by[trip]
        if set(t) != set(CAPTION_TYPES):
            incomplete += 1
            continue
        gt = t["ground_truth"][1] >= 1.0
        out.append(
            (
                t["ground_truth"][0],
                int(gt and t["in_video"][1] >= 1.0),
                int(gt and t["out_video"][1] >= 1.0),
            )
        )
    return out, incomplete


def _acc_block(trips: Sequence[tuple[str, int, int]]) -> dict[str, Any]:
    in_acc, out_acc = fmean(t[1] for t in trips), fmean(t[2] for t in trips)
    sah = sah_ratio(in_acc, out_acc)
    return {
        "n_triplets": len(trips),
        "in_acc": 100 * in_acc,
        "out_acc": 100 * out_acc,
        "avg_acc": 50 * (in_acc + out_acc),
        "sah": None if sah is None else 100 * sah,
    }


def elv_report(items: Sequence[tuple[str, str, str, float]]) -> dict[str, Any]:
    """``{"in_acc", "out_acc", "avg_acc", "sah", "n_triplets", "incomplete_triplets",
    "by_aspect": {name: {…same…}}}`` in percent."""
    trips, incomplete = _triplet_scores(items)
    if not trips:
        return {
            "n_triplets": 0,
            "incomplete_triplets": incomplete,
            "in_acc": None,
            "out_acc": None,
            "avg_acc": None,
            "sah": None,
            "by_aspect": {},
        }
    aspects: dict[str, list[tuple[str, int, int]]] = {}
    for t in trips:
        aspects.setdefault(aspect_name(t[0]), []).append(t)
    return {
        **_acc_block(trips),
        "incomplete_triplets": incomplete,
        "by_aspect": {a: _acc_block(v) for a, v in sorted(aspects.items())},
    }


def load_elv_halluc(root: Path) -> list[EvalSample]:
    ann = need(
        root, "elv_halluc", ["ELV_Halluc.jsonl", "data/ELV_Halluc.jsonl", "**/ELV_Halluc.jsonl"]
    )
    recs = [json.loads(x) for x in ann.read_text(encoding="utf-8").splitlines() if x.strip()]
    out = []
    for i, r in enumerate(recs):
        ctype = str(r.get("caption_type", ""))
        if ctype not in CAPTION_TYPES:
            raise DataError(
                f"elv_halluc line {i + 1}: caption_type {ctype!r} is not one of {CAPTION_TYPES}"
            )
        video = next((str(r[k]) for k in ("video", "video_path", "video_id") if r.get(k)), "")
        if not video:
            raise DataError(
                f"elv_halluc line {i + 1}: no video field (video, video_path or video_id)"
            )
        video = video if video.endswith((".mp4", ".mkv", ".webm")) else f"{video}.mp4"
        out.append(
            EvalSample(
                id=f"elv-{i}",
                benchmark="elv_halluc",
                video=str(video_path(root, ["videos", "video", "."], video)),
                question=str(r.get("question") or r.get("prompt") or ""),
                task="oe",
                answer=str(r["ref_answer"]).strip(),
                subset=str(r.get("aspect", "")),
                meta={
                    "triplet": str(i // 3),
                    "caption_type": ctype,
                    "aspect": str(r.get("aspect", "")),
                },
            )
        )
    return out


def rule(
    text: str, answer: str, options: Sequence[str] | None, *, item_id: str, seed: int
) -> Scored:
    yn = yes_no(text)
    return Scored(yn or "", float(yn is not None and yn == answer.strip().lower()))


def groups(s: EvalSample) -> Groups:
    return {k: str(s.meta.get(k, "")) for k in ("triplet", "caption_type", "aspect")}


def aggregate(items: Sequence[ScoredItem]) -> dict[str, object]:
    rep = elv_report(
        [
            (
                str(it.groups.get("triplet", it.id)),
                str(it.groups.get("caption_type", "")),
                str(it.groups.get("aspect", "")),
                it.scored.score,
            )
            for it in items
        ]
    )
    return {"headline": rep["avg_acc"], "headline_metric": "avg acc (SAH alongside)", **rep}


ELV_HALLUC = Benchmark("elv_halluc", load_elv_halluc, rule, aggregate, groups, answer_kind="yes_no")
