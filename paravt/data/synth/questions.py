"""ParaVT-Synth questions: every answer needs the needle (docs/ARCHITECTURE.md §9).

- MCQ: what colour flashed / which digit appeared / which shape appeared; four options written
  ``"A. red"`` … ``"D. blue"`` (the VideoMME convention; the answer is the letter).
- Temporal grounding (tvg): "When does <the needle> appear?" → ``"[start, end]"`` in seconds.
- Open-ended (oe): for a flash, "What colour is the brief flash?" → the colour word ("red"): the
  answer is the seen thing itself, and token F1 against ONE word gives a wrong colour 0 (the label
  "red flash" gave "orange flash" 0.5: partial credit for a guess, docs/repro.md); for a digit or
  a shape, "What brief event appears?" → its 2-word label ("digit 7", "blue circle"). Both are
  well under the DAPO 15-word limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from paravt.config import TaskType
from paravt.data.synth.scenes import NEEDLE_COLORS, SHAPES, Needle

LETTERS = "ABCD"


@dataclass(frozen=True)
class Question:
    task: TaskType
    question: str
    answer: str
    options: tuple[str, ...] | None = None


def option_texts(options: Sequence[str] | None) -> dict[str, str]:
    """An MCQ's options ("B. red") by letter, in order: {"A": …, "B": "red", …}."""
    return dict(o.split(". ", 1) for o in options or ())


def fmt_seconds(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"


def span_text(start: float, end: float) -> str:
    return f"[{fmt_seconds(start)}, {fmt_seconds(end)}]"


def _mcq_choices(needle: Needle, rng: np.random.Generator) -> tuple[str, list[str]]:
    if needle.kind == "flash":
        others = [c for c in NEEDLE_COLORS if c != needle.color]
        wrong = [str(c) for c in rng.choice(others, size=3, replace=False)]
        return needle.color, wrong
    if needle.kind == "digit":
        others = [str(d) for d in range(10) if d != needle.digit]
        return str(needle.digit), [str(d) for d in rng.choice(others, size=3, replace=False)]
    combos = [f"{c} {s}" for c in NEEDLE_COLORS for s in SHAPES if f"{c} {s}" != needle.label]
    return needle.label, [str(x) for x in rng.choice(combos, size=3, replace=False)]


def mcq(needle: Needle, rng: np.random.Generator) -> Question:
    right, wrong = _mcq_choices(needle, rng)
    order = [right, *wrong]
    perm = [int(i) for i in rng.permutation(4)]
    shuffled = [order[i] for i in perm]
    letter = LETTERS[shuffled.index(right)]
    options = tuple(f"{LETTERS[i]}. {text}" for i, text in enumerate(shuffled))
    stem = {
        "flash": "What colour is the brief full-frame flash?",
        "digit": "Which digit briefly appears in large print?",
        "shape": "Which large shape briefly appears?",
    }[needle.kind]
    return Question("mcq", stem, letter, options)


def tvg(needle: Needle) -> Question:
    what = {
        "flash": f"the {needle.color} flash",
        "digit": f"the digit {needle.digit}",
        "shape": f"the {needle.color} {needle.shape}",
    }[needle.kind]
    return Question(
        "tvg",
        f"When does {what} appear? Answer with [start, end] in seconds.",
        span_text(needle.start, needle.end),
    )


def oe(needle: Needle) -> Question:
    if needle.kind == "flash":
        return Question("oe", "What colour is the brief flash? Answer with one word.", needle.color)
    return Question(
        "oe", "What brief event appears in the video? Answer in a few words.", needle.label
    )


def overview_prompt(question: str, options: Sequence[str] | None) -> str:
    """The plain-text overview question of the simulated base: the video, the question, the
    options (no tags)."""
    opts = "".join(f"\n{o}" for o in options or ())
    return f"<video>\n{question.strip()}{opts}"


def questions_for(needle: Needle, rng: np.random.Generator) -> tuple[Question, Question, Question]:
    return mcq(needle, rng), tvg(needle), oe(needle)
