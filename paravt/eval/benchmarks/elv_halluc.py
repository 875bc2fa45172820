"""ELV-Halluc scoring: yes/no answers → in-video / out-of-video accuracy and the SAH ratio.

The benchmark (Lu et al. 2025; its ``eval.py``, read, not copied) asks "Is the following caption
totally correct? Reply with 'Yes' or 'No' only." about three captions of one event: the ground
truth, an in-video hallucination (details that occur elsewhere in the same video) and an
out-of-video hallucination. A triplet is in-video correct when the model says yes to the ground
truth AND no to the in-video caption; out-of-video correct likewise. Semantic Aggregation
Hallucination ratio = (OutAcc − InAcc) / (1 − InAcc): how much more the model is fooled by
details that ARE in the video. Reported per aspect (Visual Details, Object, Action, Declarative
Content) as EVA's Table 1 does; ``avg_acc`` is the accuracy over both adversarial pairs of every
triplet, i.e. (InAcc + OutAcc) / 2. Percentages. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

from paravt.eval.benchmarks.lmms_rules import strip_reasoning_tags

ASPECTS: Mapping[str, str] = {"visualdetails": "Visual Details", "visualdetail": "Visual Details",
                              "vd": "Visual Details", "object": "Object", "objects": "Object",
                              "action": "Action", "actions": "Action", "declarativecontent": "Declarative Content",
                              "declarative": "Declarative Content", "dc": "Declarative Content"}


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


def _triplet_scores(items: Sequence[tuple[str, str, str, float]]) -> tuple[list[tuple[str, int, int]], int]:
    """(aspect, in correct, out correct) per complete triplet, and the number of incomplete ones.
    ``items``: (triplet, caption_type, aspect, per-question score 0/1)."""
    by: dict[str, dict[str, tuple[str, float]]] = {}
    for trip, ctype, aspect, score in items:
        by.setdefault(trip, {})[ctype] = (aspect, score)
    out, incomplete = [], 0
    for trip in sorted(by, key=lambda t: (len(t), t)):
        t = by[trip]
        if set(t) != {"ground_truth", "in_video", "out_video"}:
            incomplete += 1
            continue
        gt = t["ground_truth"][1] >= 1.0
        out.append((t["ground_truth"][0], int(gt and t["in_video"][1] >= 1.0), int(gt and t["out_video"][1] >= 1.0)))
    return out, incomplete


def _acc_block(trips: Sequence[tuple[str, int, int]]) -> dict[str, Any]:
    in_acc, out_acc = fmean(t[1] for t in trips), fmean(t[2] for t in trips)
    sah = sah_ratio(in_acc, out_acc)
    return {"n_triplets": len(trips), "in_acc": 100 * in_acc, "out_acc": 100 * out_acc,
            "avg_acc": 50 * (in_acc + out_acc), "sah": None if sah is None else 100 * sah}


def elv_report(items: Sequence[tuple[str, str, str, float]]) -> dict[str, Any]:
    """``{"in_acc", "out_acc", "avg_acc", "sah", "n_triplets", "incomplete_triplets",
    "by_aspect": {name: {…same…}}}`` in percent."""
    trips, incomplete = _triplet_scores(items)
    if not trips:
        return {"n_triplets": 0, "incomplete_triplets": incomplete, "in_acc": None, "out_acc": None,
                "avg_acc": None, "sah": None, "by_aspect": {}}
    aspects: dict[str, list[tuple[str, int, int]]] = {}
    for t in trips:
        aspects.setdefault(aspect_name(t[0]), []).append(t)
    return {**_acc_block(trips), "incomplete_triplets": incomplete,
            "by_aspect": {a: _acc_block(v) for a, v in sorted(aspects.items())}}
