"""Optional LLM judge for open-ended answers (docs/ARCHITECTURE.md §4), applied to a batch of
episodes.

With no judge URL nothing changes (token F1). With one, every open-ended episode's R_acc is the
judge's 0 / 0.5 / 1; an item the judge cannot score falls back to token F1, and the fallbacks are
counted (``JudgeStats``), never silent.
"""

from __future__ import annotations

from collections.abc import Sequence

from paravt.agent.result import EpisodeResult
from paravt.rewards.judge import JudgeItem, judge_where_given


async def judge_overrides(
    results: Sequence[EpisodeResult], *, url: str | None, model: str | None, timeout_s: float
) -> tuple[list[float | None], dict[str, float]]:
    """Per-episode R_acc overrides (None: not open-ended or no judge) and judge counters."""
    items = [
        JudgeItem(r.input.question, r.input.answer, r.answer) if r.input.task == "oe" else None
        for r in results
    ]
    return await judge_where_given(items, url=url, model=model, timeout_s=timeout_s)
