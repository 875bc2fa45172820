"""Text-only reading drills of the simulated pretrained base: the three LOOKUPS that a clip
description, an overview MCQ and a tool response need, taught in text, as a language model's
pretraining teaches them before it ever sees a frame (issue 27; docs/repro.md, "The simulated
pretrained base").

- **stamp drill** (id ``…-read-sN``): the sub-agent's prompt with the clip written out as text, one
  ``<t seconds>`` stamp per temporal patch followed by what the patch shows ("grey" scenes, the
  needle for a few patches) → the clip's description in ``perception.describe_clip``'s words
  ("A full-frame red flash appears from 16.2 s to 20.0 s." or ``NOTHING``): copy the first and
  last stamps of the odd patches. Measured without it (flash-only clips, greedy, held-out): the
  stated time stayed wrong (0 of 60 right) after 800 steps and reached 26 of 60 only after 2,000;
- **option drill** (id ``…-read-oN``): "The clip shows <what>." + a question and four lettered
  options → the letter of the option naming it: the letter lookup of an MCQ;
- **report drill** (id ``…-read-rN``, ``report_drill``): a tool transcript in text, the results
  naming a needle → the answer: the lookup from a tool result (docs/repro-log.md, 2026-12-07 l).
  ``task`` writes the open question's (the colour or label), the MCQ's (the letter of the option
  naming it) and the span's (the reported times); ``base.parquet`` holds the tasks of
  ``REPORT_TASKS`` in turn: open questions only, as measured (docs/repro-log.md, 2026-12-07 n).

The drills carry no video, so they cost a few dozen tokens each. A drill clip is 8 patches with
stamps 1–5 s apart starting anywhere in 0–280 s: the numbers of real crops (8 patches 2–5 s apart,
0–300 s) and some closer spacings; the lookup, not the spacing, is what is taught. A drill row
carries its video's open-ended ``extra_info`` for provenance only: its needle is drawn afresh
(``scenes.draw_needle``), so ``extra_info.answer``, the needle times and ``needle_description``
do not describe the drill (nothing reads them: the probe and the trainers read the messages).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypeGuard

import numpy as np

from paravt.data.rows import ExtraInfo, Message, Row, SFTRow
from paravt.data.synth.perception import NOTHING, sighting, stamp_text
from paravt.data.synth.questions import LETTERS
from paravt.data.synth.scenes import Needle, draw_needle

if TYPE_CHECKING:
    from paravt.config import TaskType

READ = "-read-"
#: The tasks of a video's report drills, in turn (``drill_rows``). Open questions only: the three
#: tasks in turn (3 base seeds, docs/repro-log.md 2026-12-07 n) read the swapped report of an open
#: question 7 of 90 (open only: 13 of 90) and answered open questions with a stock MCQ letter.
REPORT_TASKS: tuple[TaskType, ...] = ("oe",)
REPORT = f"{READ}r"  # a report drill's id mark (the prior's report stage draws these alone)
PATCHES = 8  # a 16-frame crop in Qwen3-VL's temporal patches of 2
FILLERS = (
    "grey",
    "a grey scene",
    "two dark shapes on grey",
)  # what a patch without the needle shows


def stamp_drill(rid: str, extra: ExtraInfo, needle: Needle, rng: np.random.Generator) -> SFTRow:
    """A clip written out as text → its description (a miss about half the time)."""
    from paravt.config import SUBAGENT_PROMPT
    from paravt.protocol import prompts

    step = float(rng.choice([1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0]))
    t0 = float(rng.integers(0, 280)) + step / 2
    stamps = [t0 + j * step for j in range(PATCHES)]
    shown = [False] * PATCHES
    if rng.random() < 0.5:
        first = int(rng.integers(0, PATCHES))
        last = min(PATCHES - 1, first + int(rng.integers(0, 4)))
        shown[first : last + 1] = [True] * (last - first + 1)
    filler = str(rng.choice(FILLERS))
    lines = "\n".join(
        f"<{stamp_text(t)} seconds> {needle.description if s else filler}"
        for t, s in zip(stamps, shown)
    )
    start, end = stamps[0] - step / 2, stamps[-1] + step / 2
    system, user = prompts.subagent_messages(SUBAGENT_PROMPT, extra.question, start, end)
    text = user.replace("<video>", f"[the clip, in words]\n{lines}")
    hit = [stamp_text(t) for t, s in zip(stamps, shown) if s]
    answer = sighting(needle, hit[0], hit[-1]) if hit else NOTHING
    head = () if system is None else (Message("system", system),)
    msgs = (*head, Message("user", text), Message("assistant", answer))
    return SFTRow(rid, "sub", "sub", msgs, (), extra)


def option_drill(rid: str, extra: ExtraInfo, needle: Needle, rng: np.random.Generator) -> SFTRow:
    """A stated sighting + an MCQ of the synthetic task's kind → the letter naming it."""
    from paravt.data.synth.questions import mcq, overview_prompt

    q = mcq(needle, rng)
    user = f"The clip shows {needle.description}.\n" + overview_prompt(
        q.question, q.options
    ).replace("<video>\n", "")
    assert q.answer in LETTERS
    return SFTRow(
        rid, "main", "none", (Message("user", user), Message("assistant", q.answer)), (), extra
    )


def report_drill(
    rid: str, extra: ExtraInfo, needle: Needle, rng: np.random.Generator, task: TaskType = "oe"
) -> SFTRow:
    """A tool transcript in text: the native tool form (``prior.json_turns``) on a video of
    ``extra``'s duration that is NOT shown (no ``<video>``, the prompt's metadata only), the
    results naming the drill's needle in the window(s) that hold it, then a one-sentence think
    and the answer of ``task``'s question: the open question's colour (or label), the MCQ's letter
    of the option naming it, the span's ``[start, end]`` (the needle's whole span: the first hit
    line's start to the last one's end). The results are the only evidence: the lookup from a
    tool result to the answer that a pretrained LM's function-calling data teaches."""
    from paravt.data.synth.prior import Habit, json_turns, long_think
    from paravt.data.synth.questions import mcq, oe, tvg
    from paravt.protocol import prompts

    length = float(rng.integers(3, 9))
    start = float(rng.integers(0, int(extra.duration - length) + 1))
    shown = replace(
        extra,
        needle_start=start,
        needle_end=start + length,
        needle_description=needle.description,
    )
    if task == "mcq":
        q = mcq(needle, rng)
    elif task == "tvg":
        q = tvg(replace(needle, start=start, end=start + length))
    elif task == "oe":
        q = oe(needle)
    else:
        raise ValueError(f"report_drill: task {task!r} is not one of mcq, oe, tvg")
    prompt = prompts.user_prompt(q.question, q.options, duration=extra.duration, nframes=0)
    msgs = (
        Message("system", prompts.system_prompt("parallel")),
        Message("user", prompt),
        *json_turns(shown, rng, Habit(1)),
        Message("assistant", long_think(rng, 1) + q.answer),
    )
    return SFTRow(rid, "main", "parallel", msgs, (), extra)


def drill_rows(
    extra: ExtraInfo,
    rng: np.random.Generator,
    kinds: tuple[str, ...],
    per_kind: int,
    reports: int = 0,
) -> list[SFTRow]:
    """``per_kind`` stamp drills and as many option drills, then ``reports`` report drills (their
    tasks ``REPORT_TASKS`` in turn), their needles drawn from ``kinds``."""
    out = []
    for j in range(per_kind):
        out.append(stamp_drill(f"{extra.id}{READ}s{j}", extra, draw_needle(rng, kinds, 0, 1), rng))
        out.append(option_drill(f"{extra.id}{READ}o{j}", extra, draw_needle(rng, kinds, 0, 1), rng))
    for j in range(reports):
        needle = draw_needle(rng, kinds, 0, 1)
        task = REPORT_TASKS[j % len(REPORT_TASKS)]
        out.append(report_drill(f"{extra.id}{REPORT}{j}", extra, needle, rng, task))
    return out


def is_report_drill(row: Row) -> TypeGuard[SFTRow]:
    """A report drill (``…-read-rN``): the rows of the report stage (``prior.report_steps``)."""
    return isinstance(row, SFTRow) and REPORT in row.id
