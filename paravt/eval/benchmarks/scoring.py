"""Per-benchmark scoring of one response, and each benchmark's aggregation into paper units.

Two scorings, chosen per run (``--scoring``):

- ``lmms`` (default): what lmms-eval's task code does (`paravt.eval.benchmarks.lmms_rules`):
  reasoning tags stripped first, then the task's own extractor on the whole response;
- ``paravt``: our protocol's extraction (``<answer>`` block, `paravt.rewards.accuracy`), the
  score our training reward gives.

Aggregations follow lmms-eval's ``aggregate_results`` functions: VideoMME, LongVideoBench and
LVBench are micro accuracies; MLVU is the macro average over its fixed task-type set (a type with
no answered question counts 0, as there); MMVU counts only subjects of its discipline map;
Charades-STA keys predictions by (video, sentence, interval), so exact duplicates count once, and
reports R@0.3/0.5/0.7 and mIoU. All headlines are percentages (the papers' units). Pure.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Literal

from paravt.errors import DataError
from paravt.eval.benchmarks import lmms_rules as L
from paravt.eval.benchmarks.elv_halluc import elv_report, yes_no
from paravt.protocol.answer import extract_answer
from paravt.rewards.accuracy import mcq_accuracy, mcq_letter, parse_interval, tvg_iou

Scoring = Literal["lmms", "paravt"]
BENCHMARKS: tuple[str, ...] = ("videomme", "videomme_sub", "longvideobench", "lvbench", "mlvu", "mmvu",
                               "charades_sta", "elv_halluc")
#: lmms-eval's ``mlvu_dev`` task-type set (the macro average divides by its size).
MLVU_TASK_TYPES: tuple[str, ...] = ("anomaly_reco", "count", "ego", "needle", "order", "plotQA", "topic_reasoning")
#: lmms-eval's MMVU subject → discipline map; subjects outside it are not counted.
MMVU_DISCIPLINES: Mapping[str, str] = {
    **dict.fromkeys(("Biology", "Chemistry", "Modern_Physics", "Astronomy", "Geography", "Materials_Science",
                     "Neurobiology", "Electromagnetism", "Thermodynamics", "Mechanics"), "Science"),
    **dict.fromkeys(("Civil_Engineering", "Electrical_Engineering", "Mechanical_Engineering",
                     "Biomedical_Engineering", "Electronics_and_Communication", "Computer_Science"), "Engineering"),
    **dict.fromkeys(("Clinical_Medicine", "Basic_Medicine", "Preventive_Medicine", "Pharmacy", "Dentistry"),
                    "Healthcare"),
    **dict.fromkeys(("Art", "Literature", "History", "Law", "Economics", "Management"),
                    "Humanities_and_Social_Science"),
}
RECALLS: tuple[float, ...] = (0.3, 0.5, 0.7)
_OPTION = re.compile(r"^\(?([A-Z])\s*[.):]\s*")


@dataclass(frozen=True)
class Scored:
    """One response scored: ``pred`` is the extracted letter or ``"[s, e]"`` ("" when none),
    ``score`` 0/1 (MCQ) or the IoU; ``random`` marks LongVideoBench's random fallback."""

    pred: str
    score: float
    random: bool = False


@dataclass(frozen=True)
class ScoredItem:
    """A scored row with what the aggregation groups it by (group name → value or values)."""

    id: str
    scored: Scored
    groups: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    key: str = ""  # Charades-STA's (video, sentence, interval) key; "" = the id
    error: bool = False  # the video or the backend failed: counted wrong, never dropped


def check_benchmark(name: str) -> str:
    if name not in BENCHMARKS:
        raise DataError(f"benchmark {name!r} is unknown; available: {', '.join(BENCHMARKS)}")
    return name


def option_letters(options: Sequence[str] | None) -> list[str]:
    """The letters of ``options`` ("A. x" / "(A) x" → A; unlettered options get A, B, … by place)."""
    out = []
    for i, o in enumerate(options or ()):
        m = _OPTION.match(str(o).strip())
        out.append(m.group(1) if m else chr(ord("A") + i))
    return out


def option_texts(options: Sequence[str] | None) -> dict[str, str]:
    return {letter: _OPTION.sub("", str(o).strip(), count=1)
            for letter, o in zip(option_letters(options), options or (), strict=True)}


def _fmt_interval(a: float, b: float) -> str:
    return f"[{float(a)}, {float(b)}]"  # str(float) round-trips


def _gt_interval(answer: str) -> tuple[float, float]:
    iv = parse_interval(answer)
    if iv is None:
        raise DataError(f"charades_sta answer {answer!r} is not an interval; expected '[start, end]' in seconds")
    return iv


def score_lmms(bench: str, response: str, answer: str, options: Sequence[str] | None = None, *,
               item_id: str = "", seed: int = 0) -> Scored:
    """lmms-eval's score of ``response`` for benchmark ``bench`` (reasoning tags stripped first).
    LongVideoBench's random fallback draws from a generator seeded by (``seed``, ``item_id``), so
    a resumed or reordered run draws the same letter for the same item."""
    text = L.strip_reasoning_tags(response or "")
    if bench in ("videomme", "videomme_sub"):
        pred = L.extract_mcq_answer(text, L.MCQ_ABCD)
        return Scored(pred, float(pred.lower() == answer.lower()))
    if bench in ("lvbench", "mlvu"):
        pred = L.extract_mcq_answer(text, L.MCQ_ABCD)
        return Scored(pred, float(pred == answer))
    if bench == "longvideobench":
        rng = random.Random(f"{seed}:{item_id}")
        pred, was_random = L.parse_lvb_response(text, option_letters(options) or list("ABCDE"), rng)
        return Scored(pred, float(pred == answer), was_random)
    if bench == "mmvu":
        ok = L.mmvu_mcq_correct(text, answer, option_texts(options))
        return Scored(L.mmvu_logged_letter(text), float(ok))
    if bench == "elv_halluc":  # no lmms-eval task: the benchmark's own yes/no reading
        yn = yes_no(response or "")
        return Scored(yn or "", float(yn is not None and yn == answer.strip().lower()))
    if bench == "charades_sta":
        found = L.extract_time(text)
        if len(found) != 1:
            return Scored("", 0.0)
        (a, b), gt = found[0], _gt_interval(answer)
        return Scored(_fmt_interval(a, b), L.lmms_iou(gt, (a, b)))
    raise DataError(f"benchmark {bench!r} has no lmms scorer; available: {', '.join(BENCHMARKS)}")


def paravt_pred(bench: str, answer_text: str | None, options: Sequence[str] | None = None) -> str:
    """What our extraction reads in an extracted answer: the option letter, ``"[s, e]"`` or
    yes/no ("" = none)."""
    if check_benchmark(bench) == "elv_halluc":
        return yes_no(answer_text or "") or ""
    if bench == "charades_sta":
        iv = parse_interval(answer_text) if answer_text else None
        return _fmt_interval(*iv) if iv else ""
    return mcq_letter(answer_text, options) or ""


def score_paravt(bench: str, response: str, answer: str, options: Sequence[str] | None = None) -> Scored:
    """Our protocol's score: the ``<answer>`` content (DESIGN §2 extraction), then option-letter
    match or temporal IoU (`paravt.rewards.accuracy`)."""
    ans = extract_answer(response or "")
    pred = paravt_pred(bench, ans, options)
    if bench == "elv_halluc":
        return Scored(pred, float(bool(pred) and pred == answer.strip().lower()))
    score = tvg_iou(ans, answer) if bench == "charades_sta" else mcq_accuracy(ans, answer, options)
    return Scored(pred, score)


def score_response(bench: str, response: str, answer: str, options: Sequence[str] | None = None, *,
                   scoring: Scoring = "lmms", item_id: str = "", seed: int = 0) -> Scored:
    if scoring == "lmms":
        return score_lmms(check_benchmark(bench), response, answer, options, item_id=item_id, seed=seed)
    if scoring == "paravt":
        return score_paravt(bench, response, answer, options)
    raise DataError(f"scoring {scoring!r} is unknown; use lmms or paravt")


# --------------------------------------------------------------------------------- aggregation


def _pct(xs: Sequence[float]) -> float | None:
    return 100.0 * fmean(xs) if xs else None


def _by(items: Sequence[ScoredItem], group: str) -> dict[str, dict[str, float | int | None]]:
    buckets: dict[str, list[float]] = {}
    for it in items:
        vals = it.groups.get(group)
        for v in ((vals,) if isinstance(vals, str) else (vals or ())):
            buckets.setdefault(str(v), []).append(it.scored.score)
    return {k: {"n": len(v), "acc": _pct(v)} for k, v in sorted(buckets.items())}


def _charades(items: Sequence[ScoredItem]) -> dict[str, object]:
    keyed = {(it.key or it.id): it for it in items}  # lmms-eval merges duplicate keys, last wins
    ious = [it.scored.score for it in keyed.values()]
    out: dict[str, object] = {f"R@{k}": _pct([1.0 if x >= k else 0.0 for x in ious]) for k in RECALLS}
    out["mIoU"] = _pct(ious)
    out["n_scored"] = len(ious)
    out["no_interval"] = sum(1 for it in keyed.values() if not it.scored.pred)
    return out


def aggregate(bench: str, items: Sequence[ScoredItem]) -> dict[str, object]:
    """``{"headline", "n", "errors", …per-benchmark breakdowns}``; headline in percent."""
    check_benchmark(bench)
    scores = [it.scored.score for it in items]
    out: dict[str, object] = {"n": len(items), "errors": sum(it.error for it in items),
                              "random_fallbacks": sum(it.scored.random for it in items)}
    if bench == "elv_halluc":
        rep = elv_report([(str(it.groups.get("triplet", it.id)), str(it.groups.get("caption_type", "")),
                           str(it.groups.get("aspect", "")), it.scored.score) for it in items])
        return {**out, "headline": rep["avg_acc"], "headline_metric": "avg acc (SAH alongside)", **rep}
    if bench == "charades_sta":
        ch = _charades(items)
        return {**out, "headline": ch["mIoU"], "headline_metric": "mIoU", **ch}
    if bench in ("videomme", "videomme_sub"):
        out.update(by_duration=_by(items, "duration"), by_task_type=_by(items, "task_type"),
                   by_domain=_by(items, "domain"))
    elif bench == "longvideobench":
        out.update(by_duration_group=_by(items, "duration_group"), by_question_category=_by(items, "question_category"))
    elif bench == "lvbench":
        out.update(by_question_type=_by(items, "question_type"), by_video_type=_by(items, "video_type"))
    elif bench == "mlvu":
        per = _by(items, "task_type")
        macro = [(per.get(t) or {}).get("acc") or 0.0 for t in MLVU_TASK_TYPES]
        out.update(by_task_type=per, micro=_pct(scores), missing_task_types=[t for t in MLVU_TASK_TYPES if t not in per])
        return {**out, "headline": fmean(macro), "headline_metric": "macro acc over task types"}
    elif bench == "mmvu":
        kept = [it for it in items if it.groups.get("subject") in MMVU_DISCIPLINES]
        out.update(by_discipline=_by(kept, "discipline"), by_subject=_by(kept, "subject"),
                   not_in_discipline_map=len(items) - len(kept))
        return {**out, "headline": _pct([it.scored.score for it in kept]), "headline_metric": "acc"}
    return {**out, "headline": _pct(scores), "headline_metric": "acc"}
