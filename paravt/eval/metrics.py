"""Eval metrics from result rows (docs/ARCHITECTURE.md §6): per-task quality, tool use, tokens,
latency.

Scores come from the rows (``score`` = option match for MCQ, IoU for temporal grounding, token
F1 for open-ended; computed by the rewards module); this module only aggregates. Pure: no I/O.

``compute_metrics`` returns a `summary` of all rows plus the same summary broken down by task,
subset, gated nframes and tool necessity, and the whole breakdown again for each dispatch mode
under ``by_mode``. Groups with no row of a task report ``None`` for that task's metrics.

A failed row (``ResultRow.failed``: the model server failed its request, the episode crashed) was
never answered, so it is no wrong answer: every summary leaves it out of ``n`` and of every rate
and mean, and counts it in ``n_failed`` beside them (``results.jsonl`` keeps it with its error).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from statistics import fmean, median
from typing import Any

from paravt.eval.results import ResultRow

#: IoU thresholds of the temporal-grounding recall R@k.
RECALL_THRESHOLDS: tuple[float, ...] = (0.3, 0.5, 0.7)
TOKEN_FIELDS: tuple[str, ...] = ("main_visual", "main_text", "sub_visual", "sub_text", "generated")


def _mean(xs: Sequence[float]) -> float | None:
    return fmean(xs) if xs else None


def recall_at(ious: Sequence[float], threshold: float) -> float | None:
    """Fraction of IoUs ≥ ``threshold`` (None for no rows)."""
    return _mean([1.0 if x >= threshold else 0.0 for x in ious])


def _task_metrics(rows: Sequence[ResultRow]) -> dict[str, float | None]:
    mcq = [r.score for r in rows if r.task == "mcq"]
    tvg = [r.score for r in rows if r.task == "tvg"]
    oe = [r.score for r in rows if r.task == "oe"]
    out: dict[str, float | None] = {"mcq_acc": _mean(mcq), "tvg_miou": _mean(tvg)}
    for k in RECALL_THRESHOLDS:
        out[f"tvg_r@{k}"] = recall_at(tvg, k)
    out["oe_f1"] = _mean(oe)
    return out


def _token_metrics(rows: Sequence[ResultRow]) -> dict[str, float]:
    out = {f: fmean(getattr(r.tokens, f) for r in rows) for f in TOKEN_FIELDS}
    out["main_input"] = fmean(r.tokens.main_input for r in rows)
    out["total_input"] = fmean(r.tokens.total_input for r in rows)
    return out


def summarize(rows: Sequence[ResultRow]) -> dict[str, Any]:
    """Flat summary of one group of rows. ``n``: the rows that ran to an end (failed rows are
    counted in ``n_failed`` and nowhere else); ``score`` is the mean row score over all tasks (the
    accuracy reward); ``correct_rate`` the fraction of rows marked correct; ``skip_tool_rate`` the
    fraction of rollouts with no tool call; tokens and latency are means per rollout."""
    n_failed = sum(r.failed for r in rows)
    rows = [r for r in rows if not r.failed]
    if not rows:
        return {"n": 0, "n_failed": n_failed}
    calls = [c for r in rows for c in r.calls]
    ends: dict[str, int] = {}
    for r in rows:
        ends[r.end_reason] = ends.get(r.end_reason, 0) + 1
    return {
        "n": len(rows),
        "n_failed": n_failed,
        "score": fmean(r.score for r in rows),
        "correct_rate": fmean(1.0 if r.correct else 0.0 for r in rows),
        **_task_metrics(rows),
        "mean_calls": fmean(r.n_calls for r in rows),
        # as in training (paravt.rewards.metrics): no call WRITTEN (older rows: none recorded)
        "skip_tool_rate": fmean(
            1.0 if (r.n_calls if r.calls_written is None else r.calls_written) == 0 else 0.0
            for r in rows
        ),
        "format_reward": _mean([r.format_reward for r in rows if r.format_reward is not None]),
        "call_ok_rate": _mean([1.0 if c.ok else 0.0 for c in calls]),
        "tokens": _token_metrics(rows),
        "latency_s": fmean(r.latency_s for r in rows),
        "latency_p50_s": median(r.latency_s for r in rows),
        "end_reasons": dict(sorted(ends.items())),
    }


def _group(
    rows: Sequence[ResultRow], key: Callable[[ResultRow], str | None]
) -> dict[str, list[ResultRow]]:
    groups: dict[str, list[ResultRow]] = {}
    for r in rows:
        k = key(r)
        if k is not None:
            groups.setdefault(k, []).append(r)
    return groups


def _necessity(r: ResultRow) -> str | None:
    if r.tool_necessary is None:
        return None
    return "necessary" if r.tool_necessary else "unnecessary"


def tool_necessity_gap(rows: Sequence[ResultRow]) -> float | None:
    """Tool Necessity Gap: mean score on tool-unnecessary prompts minus mean score on
    tool-necessary prompts (positive = the model fails where it has to look). None unless both
    kinds of prompt are present. Failed rows are left out."""
    g = _group([r for r in rows if not r.failed], _necessity)
    if not g.get("necessary") or not g.get("unnecessary"):
        return None
    return fmean(r.score for r in g["unnecessary"]) - fmean(r.score for r in g["necessary"])


def breakdown(rows: Sequence[ResultRow]) -> dict[str, Any]:
    """`summarize` of all rows, plus summaries by task, subset, nframes and tool necessity."""
    by_n = _group(rows, lambda r: str(r.nframes))
    return {
        "summary": summarize(rows),
        "by_task": {k: summarize(v) for k, v in sorted(_group(rows, lambda r: r.task).items())},
        "by_subset": {k: summarize(v) for k, v in sorted(_group(rows, lambda r: r.subset).items())},
        "by_nframes": {k: summarize(by_n[k]) for k in sorted(by_n, key=int)},
        "by_tool_necessary": {k: summarize(v) for k, v in sorted(_group(rows, _necessity).items())},
        "tool_necessity_gap": tool_necessity_gap(rows),
    }


def compute_metrics(rows: Sequence[ResultRow]) -> dict[str, Any]:
    """All eval metrics of ``rows`` (JSON-serialisable; keys of nframes groups are strings).

    ``{"summary", "by_task", "by_subset", "by_nframes", "by_tool_necessary",
    "tool_necessity_gap", "by_mode": {mode: <the same breakdown for that mode>}}``."""
    out = breakdown(rows)
    out["by_mode"] = {m: breakdown(v) for m, v in sorted(_group(rows, lambda r: r.mode).items())}
    return out
