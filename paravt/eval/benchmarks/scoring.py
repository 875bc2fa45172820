"""Scoring one response by a benchmark, and a benchmark's aggregation into paper units.

Two scorings, chosen per run (``--scoring``):

- ``lmms`` (default): what lmms-eval's task code does: reasoning tags stripped first
  (`paravt.eval.benchmarks.lmms_rules`), then the benchmark's own rule (``Benchmark.rule``, in
  its module) on the whole response;
- ``paravt``: our protocol's extraction (``<answer>`` block, `paravt.rewards.accuracy`), read
  as the benchmark's ``answer_kind`` says (an option letter, an interval, yes/no): the score our
  training reward gives.

Aggregations follow lmms-eval's ``aggregate_results`` functions; each benchmark's is its
``Benchmark.aggregate`` (in its module). All headlines are percentages (the papers' units). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from paravt.config import Scoring
from paravt.errors import DataError
from paravt.eval.benchmarks import lmms_rules as L
from paravt.eval.benchmarks.base import Scored, ScoredItem, fmt_interval
from paravt.eval.benchmarks.elv_halluc import yes_no
from paravt.eval.benchmarks.registry import check_benchmark, get_benchmark
from paravt.protocol.answer import extract_answer
from paravt.rewards.accuracy import mcq_accuracy, mcq_letter, parse_interval, tvg_iou


def score_lmms(
    bench: str,
    response: str,
    answer: str,
    options: Sequence[str] | None = None,
    *,
    item_id: str = "",
    seed: int = 0,
) -> Scored:
    """lmms-eval's score of ``response`` for benchmark ``bench`` (reasoning tags stripped first).
    A random fallback (LongVideoBench's) draws from a generator seeded by (``seed``,
    ``item_id``), so a resumed or reordered run draws the same letter for the same item."""
    rule = get_benchmark(bench).rule
    return rule(L.strip_reasoning_tags(response or ""), answer, options, item_id=item_id, seed=seed)


def paravt_pred(bench: str, answer_text: str | None, options: Sequence[str] | None = None) -> str:
    """What our extraction reads in an extracted answer: the option letter, ``"[s, e]"`` or
    yes/no ("" = none)."""
    kind = get_benchmark(bench).answer_kind
    if kind == "yes_no":
        return yes_no(answer_text or "") or ""
    if kind == "interval":
        iv = parse_interval(answer_text) if answer_text else None
        return fmt_interval(*iv) if iv else ""
    return mcq_letter(answer_text, options) or ""


def score_paravt(
    bench: str, response: str, answer: str, options: Sequence[str] | None = None
) -> Scored:
    """Our protocol's score: the ``<answer>`` content (docs/ARCHITECTURE.md §2 extraction), then
    option-letter
    match, temporal IoU or yes/no match (`paravt.rewards.accuracy`)."""
    ans = extract_answer(response or "")
    pred = paravt_pred(bench, ans, options)
    kind = get_benchmark(bench).answer_kind
    if kind == "yes_no":
        return Scored(pred, float(bool(pred) and pred == answer.strip().lower()))
    score = tvg_iou(ans, answer) if kind == "interval" else mcq_accuracy(ans, answer, options)
    return Scored(pred, score)


def score_response(
    bench: str,
    response: str,
    answer: str,
    options: Sequence[str] | None = None,
    *,
    scoring: Scoring = "lmms",
    item_id: str = "",
    seed: int = 0,
) -> Scored:
    if scoring == "lmms":
        return score_lmms(bench, response, answer, options, item_id=item_id, seed=seed)
    if scoring == "paravt":
        return score_paravt(check_benchmark(bench), response, answer, options)
    raise DataError(f"scoring {scoring!r} is unknown; use lmms or paravt")


def aggregate(bench: str, items: Sequence[ScoredItem]) -> dict[str, object]:
    """``{"n", "errors", "random_fallbacks", "headline", "headline_metric", …the benchmark's
    breakdowns}``; headline in percent."""
    agg = get_benchmark(bench).aggregate
    out: dict[str, object] = {
        "n": len(items),
        "errors": sum(it.error for it in items),
        "random_fallbacks": sum(it.scored.random for it in items),
    }
    return {**out, **agg(items)}
