"""A sample of each RL step's rollouts, raw, beside ``train_log.jsonl``: ``rollouts.jsonl``.

The analogue of the paper's Appendix D: a reader sees a ``<tool_code>`` reversion or a dropped
``</answer>`` in the model's own text, with the parsed tags, the reward's terms and the group's
advantage next to it. Per step, ``n`` rollouts are drawn at random (seeded by the step) and, on
top, the first rollout of the step that shows each failure a reader looks for (``NOTABLE``),
each row saying why it was picked. The rows are data for the report (`paravt.report.page`, section
"Rollouts during RL"),
written and read through `paravt.jsonl` (a torn last line from a killed run is tolerated).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from paravt.agent import EpisodeResult
from paravt.jsonl import append_jsonl, read_jsonl, rewrite_jsonl
from paravt.rewards import RewardBreakdown

FILE = "rollouts.jsonl"
MAX_CHARS = 6000  # of a completion (a degenerate one can be the whole token budget)

#: Why a rollout is shown besides the random draw: the failures of the paper's Appendix D.
NOTABLE: dict[str, Callable[[RewardBreakdown], bool]] = {
    "tool_code": lambda b: b.tool_code,
    "unclosed_answer": lambda b: not b.closed_answer,
    "unclosed_think": lambda b: not b.closed_think,
}


def pick(rewards: Sequence[RewardBreakdown], n: int, seed: int) -> list[tuple[int, str]]:
    """(rollout index, why) pairs: ``n`` seeded random ones, then the first of each ``NOTABLE``
    kind not already shown. Deterministic in (rewards, n, seed)."""
    idx = list(range(len(rewards)))
    chosen = [(i, "random") for i in sorted(random.Random(seed).sample(idx, min(n, len(idx))))]
    shown = {i for i, _ in chosen}
    for why, test in NOTABLE.items():
        if any(test(rewards[i]) for i in shown):
            continue
        first = next((i for i in idx if test(rewards[i])), None)
        if first is not None:
            chosen.append((first, why))
            shown.add(first)
    return chosen


def sample_rows(
    step: int,
    results: Sequence[EpisodeResult],
    rewards: Sequence[RewardBreakdown],
    group_of: Sequence[str],
    advantages: Mapping[int, float],
    *,
    n: int,
    seed: int,
) -> list[dict[str, Any]]:
    """The JSON rows of one step's sample. ``advantages`` maps a rollout index to its episode's
    advantage; a rollout whose group the online filters dropped has none (``null``)."""
    rows = []
    for i, why in pick(rewards, n, seed):
        r, b = results[i], rewards[i]
        text = r.completion
        rows.append(
            {
                "step": step,
                "picked": why,
                "episode_id": r.main.episode_id,
                "group": group_of[i],
                "prompt_id": r.input.id,
                "nframes": r.input.nframes,
                "question": r.input.question,
                "gold": r.input.answer,
                "completion": text[:MAX_CHARS],
                "truncated_chars": max(0, len(text) - MAX_CHARS),
                "tags": {
                    "closed_think": b.closed_think,
                    "closed_tool_call": b.closed_tool_call,
                    "closed_answer": b.closed_answer,
                    "tool_code": b.tool_code,
                    "n_calls": b.n_calls,
                    "degenerate": b.degenerate,
                },
                "answer": b.answer,
                "reward": b.reward,
                "terms": {**b.terms, **b.components},
                "format": b.format,
                "advantage": advantages.get(i),
                "end_reason": str(r.end_reason),
                "calls": [
                    {
                        "turn": c.turn,
                        "name": c.name,
                        "window": [c.start, c.end],
                        "ok": c.ok,
                        "error": c.error,
                        "summary": c.summary[:500],
                    }
                    for c in r.calls
                ],
            }
        )
    return rows


class RolloutLog:
    """``rollouts.jsonl`` of one run: appended per step; on resume, rows after the checkpoint go."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / FILE

    def start_fresh(self) -> None:
        self.path.unlink(missing_ok=True)

    def truncate_after(self, step: int) -> None:
        if self.path.exists():
            rewrite_jsonl(
                self.path, [r for r in read_jsonl(self.path) if int(r.get("step", 0)) <= step]
            )

    def append(self, rows: Sequence[Mapping[str, Any]]) -> None:
        if rows:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            append_jsonl(self.path, rows, fsync=False)


def read_rollouts(run_dir: str | Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / FILE
    return list(read_jsonl(path)) if path.exists() else []
