"""What a benchmark is: the `Benchmark` record the registry holds, the sample its loader returns
and the scored rows its rule and aggregation exchange.

A benchmark is ONE object (`Benchmark`): its name, its loader (published on-disk layout →
`EvalSample`s), its lmms-eval rule (one response → `Scored`), what our own extraction reads in
an answer (``answer_kind``), what its aggregation groups a sample by (``groups``), its
aggregation (scored rows → the headline in the paper's units) and its Table 1 column. Each lives
in one module of this package; `paravt.eval.benchmarks.registry` lists them. Pure records and
helpers; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any, Literal, Protocol

from paravt.config import TaskType
from paravt.eval.benchmarks import lmms_rules as L

if TYPE_CHECKING:
    from paravt.agent import EpisodeInput

#: What our protocol's extraction (``--scoring paravt``) reads in the ``<answer>`` block.
AnswerKind = Literal["letter", "interval", "yes_no"]
Groups = Mapping[str, str | tuple[str, ...]]
_OPTION = re.compile(r"^\(?([A-Z])\s*[.):]\s*")


@dataclass(frozen=True)
class EvalSample:
    """One benchmark question as its loader reads it."""

    id: str
    benchmark: str
    video: str  # absolute path
    question: str
    task: TaskType
    answer: str
    options: tuple[str, ...] | None = None  # "A. text" form
    duration: float | None = None  # seconds when the annotation has it
    subset: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_episode_input(self, nframes: int = 64) -> EpisodeInput:
        """The episode's input; the benchmark's own grouping keys stay in ``meta``."""
        from paravt.agent import EpisodeInput

        return EpisodeInput(
            id=self.id,
            video=self.video,
            question=self.question,
            task=self.task,
            answer=self.answer,
            options=self.options,
            nframes=nframes,
            meta=dict(self.meta),
            subset=self.subset,
            duration=self.duration,
            benchmark=self.benchmark,
        )


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
    groups: Groups = field(default_factory=dict)
    key: str = ""  # Charades-STA's (video, sentence, interval) key; "" = the id
    error: bool = False  # the video or the backend failed: counted wrong, never dropped


class LmmsRule(Protocol):
    """lmms-eval's per-response rule of one benchmark. ``text`` has its reasoning blocks stripped
    already (lmms-eval's default); ``item_id`` and ``seed`` seed a random fallback where the
    task has one."""

    def __call__(
        self, text: str, answer: str, options: Sequence[str] | None, *, item_id: str, seed: int
    ) -> Scored: ...


@dataclass(frozen=True)
class Table1Column:
    """The benchmark's column in the paper's Table 1: its title and the quoted reference values
    (model → value in the paper's units; not measured here)."""

    title: str
    paper: Mapping[str, float] = field(default_factory=dict)


#: [paper] the models of ParaVT Table 1's quoted rows (PAPER.md "ParaVT — results to compare
#: against").
TABLE1_MODELS: tuple[str, ...] = ("Qwen3-VL-8B", "ParaVT-8B")


def table1_column(title: str, *quoted: float) -> Table1Column:
    """A Table 1 column with the paper's values in `TABLE1_MODELS` order."""
    return Table1Column(title, dict(zip(TABLE1_MODELS, quoted, strict=True)))


@dataclass(frozen=True)
class Benchmark:
    """Everything paravt knows about one benchmark (see the module doc)."""

    name: str
    loader: Callable[[Path], list[EvalSample]]
    rule: LmmsRule
    #: scored rows → ``{"headline", "headline_metric", …breakdowns}``, headline in percent
    aggregate: Callable[[Sequence[ScoredItem]], dict[str, object]]
    groups: Callable[[EvalSample], Groups]
    answer_kind: AnswerKind = "letter"
    table1: Table1Column | None = None
    #: lmms-eval keys predictions by (video, question, answer), so exact duplicates count once
    content_key: bool = False
    #: under a root of several benchmarks, the directory it reads when it has none of its own
    shares_dir_of: str = ""


def letter_rule(
    text: str, answer: str, options: Sequence[str] | None, *, item_id: str, seed: int
) -> Scored:
    """lmms-eval's MCQ letter extraction, exact (case-sensitive) match (LVBench, MLVU)."""
    pred = L.extract_mcq_answer(text, L.MCQ_ABCD)
    return Scored(pred, float(pred == answer))


def no_groups(sample: EvalSample) -> Groups:
    return {}


def pct(xs: Sequence[float]) -> float | None:
    """Mean of ``xs`` in percent (None when empty)."""
    return 100.0 * fmean(xs) if xs else None


def by_group(items: Sequence[ScoredItem], group: str) -> dict[str, dict[str, float | int | None]]:
    """``{value: {"n", "acc"}}`` over the items' ``group`` (an item with several values counts in
    each)."""
    buckets: dict[str, list[float]] = {}
    for it in items:
        vals = it.groups.get(group)
        for v in (vals,) if isinstance(vals, str) else (vals or ()):
            buckets.setdefault(str(v), []).append(it.scored.score)
    return {k: {"n": len(v), "acc": pct(v)} for k, v in sorted(buckets.items())}


def micro_accuracy(items: Sequence[ScoredItem]) -> dict[str, object]:
    """The plain headline: accuracy over every item, in percent."""
    return {"headline": pct([it.scored.score for it in items]), "headline_metric": "acc"}


def fmt_interval(a: float, b: float) -> str:
    """An interval as a prediction string, ``"[s, e]"`` seconds."""
    return f"[{float(a)}, {float(b)}]"  # str(float) round-trips


def option_letters(options: Sequence[str] | None) -> list[str]:
    """The letters of ``options`` ("A. x" / "(A) x" → A; unlettered options get A, B, … by
    place)."""
    out = []
    for i, o in enumerate(options or ()):
        m = _OPTION.match(str(o).strip())
        out.append(m.group(1) if m else chr(ord("A") + i))
    return out


def option_texts(options: Sequence[str] | None) -> dict[str, str]:
    return {
        letter: _OPTION.sub("", str(o).strip(), count=1)
        for letter, o in zip(option_letters(options), options or (), strict=True)
    }
