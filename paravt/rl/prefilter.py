"""DAPO pre-filter of RL prompts (docs/ARCHITECTURE.md §5), offline, before training.

Three rules, applied in order; each dropped prompt is recorded with its rule:

1. ``answer_length`` [paper]: open-ended prompts whose ground-truth answer has more than 15 words
   (whitespace tokens) are dropped — token F1 on long free text is a noisy reward.
2. ``all_wrong`` [paper]: prompts whose G rollouts under the initial policy are ALL wrong are
   dropped (they give zero-variance groups and no gradient). A rollout is correct when its
   accuracy (`paravt.rewards.accuracy`: MCQ exact letter, tvg IoU, oe token F1) is ≥
   ``correct_at`` (default 0.5: R@0.5 for grounding, F1 ≥ 0.5 for open-ended).
3. ``unanimous`` [paper, DAPO]: prompts whose G rollouts are ALL correct (an all-right group has
   no variance either: nothing to learn). ``unanimous=False`` keeps them.

`paravt repro` runs it once, before RL, on the cold start (G rollouts per prompt at the RL
temperature, on the pool of prompts the run draws from, ``rl.filter`` offline: the paper's); the
RL steps then train every group they roll out. Rule 1 and the decisions of rules 2 and 3 are pure
functions; `filter_rollouts` runs the G rollouts through the episode (`paravt.agent.run_group`)
with the rollout's own answer extraction, and `rollout_accuracies` keeps their accuracies.

The rollouts are seeded: each request's seed derives from ``seed`` and the rollout's id
(`paravt.agent.settings.derive_seed`), so the filter samples the same rollouts whatever ran before
it in the process (a resumed `paravt repro` skips the stages that ran before it; unseeded, its
samples came from wherever the process's global RNG stood, and its accuracies differed).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paravt.data.rows import Row
from paravt.rewards.terms import CORRECT_THRESHOLD

if TYPE_CHECKING:
    from paravt.agent import EpisodeSettings

MAX_ANSWER_WORDS = 15


@dataclass(frozen=True)
class DroppedRow:
    id: str
    rule: str  # "answer_length" | "all_wrong" | "unanimous"
    detail: str


@dataclass(frozen=True)
class PrefilterReport:
    kept: tuple[str, ...]
    dropped: tuple[DroppedRow, ...] = ()
    accuracies: Mapping[str, tuple[float, ...]] = field(default_factory=dict)

    @property
    def by_rule(self) -> dict[str, int]:
        return dict(sorted(Counter(d.rule for d in self.dropped).items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "kept": len(self.kept),
            "dropped": len(self.dropped),
            "by_rule": self.by_rule,
            "rows": [{"id": d.id, "rule": d.rule, "detail": d.detail} for d in self.dropped],
        }


def fallback_line(prior: str, report: Mapping[str, Any], path: Path) -> str:
    """The one line that says the offline filter kept too few prompts and RL trains on the whole
    pool, from its report (`paravt repro` prints it on stderr, the HTML report shows it; a report
    of another shape gives the line without the parts it lacks)."""
    by_rule = report.get("by_rule")
    rules = (
        ", ".join(f"{k} {v}" for k, v in by_rule.items())
        if isinstance(by_rule, Mapping) and by_rule
        else "none"
    )
    acc = report.get("mean_accuracy")
    real = isinstance(acc, (int, float)) and not isinstance(acc, bool) and math.isfinite(acc)
    at = f", mean rollout accuracy {acc:.2f}" if real else ""
    return (
        f"the offline filter ({prior} prior) kept {report.get('kept')} of {report.get('pool')} "
        f"RL prompts (dropped: {rules}{at}), fewer than rl.prompts_per_step: RL trains on the "
        f"whole unfiltered pool ({path}); a larger preset (a longer cold start, more RL prompts) "
        "gives the filter prompts to keep, --set rl.filter=online filters each step instead"
    )


def answer_too_long(task: str, answer: str, *, max_words: int = MAX_ANSWER_WORDS) -> bool:
    """True for an open-ended answer of more than ``max_words`` words (other tasks never)."""
    return task == "oe" and len(answer.split()) > max_words


def all_wrong(accuracies: Sequence[float], *, correct_at: float = CORRECT_THRESHOLD) -> bool:
    """True when every rollout's accuracy is below ``correct_at`` (and there is at least one)."""
    return bool(accuracies) and all(a < correct_at for a in accuracies)


def all_right(accuracies: Sequence[float], *, correct_at: float = CORRECT_THRESHOLD) -> bool:
    """True when every rollout's accuracy is at least ``correct_at`` (and there is at least one)."""
    return bool(accuracies) and all(a >= correct_at for a in accuracies)


def _rollout_rule(
    accs: Sequence[float], correct_at: float, unanimous: bool
) -> tuple[str, str] | None:
    """Rule 2 or 3 for one prompt's rollout accuracies: (rule, detail), or None to keep it."""
    if all_wrong(accs, correct_at=correct_at):
        return "all_wrong", f"{len(accs)} rollouts, max accuracy {max(accs):.2f} < {correct_at}"
    if unanimous and all_right(accs, correct_at=correct_at):
        return "unanimous", f"{len(accs)} rollouts, min accuracy {min(accs):.2f} >= {correct_at}"
    return None


def prefilter(
    rows: Sequence[Row],
    accuracies: Mapping[str, Sequence[float]] | None = None,
    *,
    max_words: int = MAX_ANSWER_WORDS,
    correct_at: float = CORRECT_THRESHOLD,
    unanimous: bool = True,
) -> tuple[list[Row], PrefilterReport]:
    """Apply rule 1, then rules 2 and 3 for rows that have rollout ``accuracies`` (keyed by row
    id)."""
    kept: list[Row] = []
    dropped: list[DroppedRow] = []
    for r in rows:
        e = r.extra_info
        if answer_too_long(e.task, e.answer, max_words=max_words):
            dropped.append(
                DroppedRow(r.id, "answer_length", f"{len(e.answer.split())} words > {max_words}")
            )
            continue
        accs = (accuracies or {}).get(r.id)
        hit = _rollout_rule(accs, correct_at, unanimous) if accs else None
        if hit is not None:
            dropped.append(DroppedRow(r.id, *hit))
            continue
        kept.append(r)
    acc = {k: tuple(v) for k, v in (accuracies or {}).items()}
    return kept, PrefilterReport(tuple(r.id for r in kept), tuple(dropped), acc)


@dataclass(frozen=True)
class FilterRollout:
    """One of the G rollouts of a prompt: what it answered and how it scored."""

    id: str  # the prompt's row id
    index: int  # 0..G-1
    accuracy: float
    answer: str | None
    end_reason: str
    generated: str  # what the model sampled (its turns, without forced prefixes)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "index": self.index,
            "accuracy": self.accuracy,
            "answer": self.answer,
            "end_reason": self.end_reason,
            "generated": self.generated,
        }


def accuracies_of(rollouts: Sequence[FilterRollout]) -> dict[str, tuple[float, ...]]:
    """Each prompt's rollout accuracies, by row id, in rollout order."""
    out: dict[str, list[float]] = {}
    for r in rollouts:
        out.setdefault(r.id, []).append(r.accuracy)
    return {k: tuple(v) for k, v in out.items()}


async def rollout_accuracies(
    rows: Sequence[Row],
    root: str | Path,
    *,
    generator: Any,
    codec: Any,
    settings: EpisodeSettings,
    g: int = 8,
    tools: Any = None,
    nframes: int | None = None,
    seed: int = 0,
) -> dict[str, tuple[float, ...]]:
    """`filter_rollouts` → the accuracy of each rollout, by row id."""
    return accuracies_of(
        await filter_rollouts(
            rows,
            root,
            generator=generator,
            codec=codec,
            settings=settings,
            g=g,
            tools=tools,
            nframes=nframes,
            seed=seed,
        )
    )


async def filter_rollouts(
    rows: Sequence[Row],
    root: str | Path,
    *,
    generator: Any,
    codec: Any,
    settings: EpisodeSettings,
    g: int = 8,
    tools: Any = None,
    nframes: int | None = None,
    seed: int = 0,
) -> list[FilterRollout]:
    """G rollouts per row (all concurrently through `run_group`, with ``tools``: default the crop
    tool; at ``nframes`` overview frames, default each row's own), sampled with ``seed`` (module
    docstring; a seed already in ``settings.sampling`` is kept) → each one scored, row by row."""
    from dataclasses import replace

    from paravt.agent import run_group
    from paravt.agent.inputs import to_episode_input
    from paravt.rewards import accuracy

    if settings.sampling.seed is None:
        settings = replace(
            settings,
            sampling=replace(settings.sampling, seed=seed),
            sub_sampling=replace(settings.sub_sampling, seed=seed),
        )
    inputs = [to_episode_input(r, root, nframes=nframes) for r in rows for _ in range(g)]
    ids = [f"prefilter-{r.id}-{j}" for r in rows for j in range(g)]
    results = await run_group(
        inputs, generator=generator, codec=codec, settings=settings, tools=tools, episode_ids=ids
    )
    out = []
    for r_idx, res in enumerate(results):
        e = rows[r_idx // g].extra_info
        acc = float(accuracy(e.task, res.answer, e.answer, e.options))
        out.append(
            FilterRollout(
                rows[r_idx // g].id, r_idx % g, acc, res.answer, res.end_reason, res.generated
            )
        )
    return out
