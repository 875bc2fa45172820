"""Data of the simulated PRETRAINED BASE (``paravt train prior`` on ``base.parquet``), the analogue
of an LMM's pretraining, before any of our tags. Built from TRAINING videos only (``build``):

- perception (``kind=sub`` rows, id ``…-see-hN``/``…-see-mN``): a clip (a window's frames with
  their time stamps, asked in the sub-agent's plain-text prompt) → ``perception.describe_clip``
  (what appears, at the stamps of the frames that show it), or that nothing brief appears.
  Every video gives as many miss clips as hit clips, and the hit clips per video are scaled so
  that every needle kind is seen about equally often (``clip_counts``);
- overview QA (``kind=main``, mode ``none``, id ``…-ovq-nN``): an n-frame overview and the question
  in plain text → the bare answer (MCQ letter, ``[start, end]``, the label), no system prompt, no
  tags; at n = 64 (the overview shows the needle) and one smaller n. The n = 64 MCQ comes
  ``MCQ_VARIANTS`` times (``…-ovq-n64vJ``), each with fresh distractors and a fresh option order:
  matching what the frames show to a letter is a skill of its own, and one MCQ per video gave it
  120 examples, too few to learn (docs/repro.md);
- text-only reading drills (``paravt.data.synth.drills``, id ``…-read-…``): a clip written out as
  stamped words → its description, a stated sighting + an MCQ → the letter (``DRILLS_PER_VIDEO``
  of each), a tool transcript in text → the answer its results name (``REPORT_DRILLS_PER_VIDEO``);
  per training video, of the video's needle kind;
- the RL prompts themselves (``kind=rl``): ``prior_traces`` turns them into the habit traces of
  ``paravt.data.synth.prior`` (long thinks, untagged answers and, for a share ``tool_mix``, one
  ``<tool_code>`` python call per turn: the strong prior; ``tool_mix = 0``: the weak prior).

The two priors share everything but the habit traces: one mixture each (docs/repro.md).
``base_eval.parquet`` holds the same perception and MCQ rows for held-out videos, and for each
flash video its 4-frame overview misses, its questions in the native tool form with a SWAPPED
tool report (``report_row``, id ``…-rep-n4``): the probe of ``paravt.repro.base_probe``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import TypeGuard

import numpy as np

from paravt.data.rows import ExtraInfo, Message, RLRow, Row, SFTRow, VideoPart
from paravt.data.synth.oracle import Window, crop_nframes, main_prompt, plan_windows
from paravt.data.synth.perception import NOTHING, describe_clip
from paravt.data.synth.prior import Habit, json_turns, long_think
from paravt.data.synth.questions import Question, option_texts, overview_prompt, span_text
from paravt.data.synth.scenes import VideoSpec, caught_by_overview, other_color
from paravt.errors import DataError

CLIPS_PER_VIDEO = 4  # hit clips of a video of the most frequent needle kind; as many misses
CLIP_LEN_S = (16, 40)  # random clip lengths (whole seconds): 16 frames, 1–2.5 s apart, like a crop
OVERVIEW_NS = (4, 8, 16, 32)  # the second overview of each question (the first is always 64)
MCQ_VARIANTS = 4  # the n = 64 MCQ of a training video, each with its own distractors and order
DRILLS_PER_VIDEO = 2  # stamp drills and option drills per training video (text only: cheap)
#: Report drills per training video (``drills.report_drill``): a quarter of the base's rows, ~2,000
#: seen in the mixture, as many as formed the lookup when trained alone; inside the mixture the
#: base reads 0.10–0.25 of its check's 0.8 (docs/repro-log.md, 2026-12-07 l: not yet calibrated).
REPORT_DRILLS_PER_VIDEO = 8
SEE, OVQ, REP = "-see-", "-ovq-", "-rep-"
#: The swapped-report probe's overview budget (its rows only where that overview misses the flash).
REPORT_N = 4


def clip_counts(kinds: Sequence[str], clips: int = CLIPS_PER_VIDEO) -> dict[str, int]:
    """Hit clips per video of each needle kind: ``clips`` for the most frequent kind, more for
    rarer ones, so that each kind gives about the same number of hit clips."""
    count = Counter(kinds)
    top = max(count.values(), default=1)
    return {k: max(1, round(clips * top / c)) for k, c in count.items()}


def _random_clip(
    spec: VideoSpec, rng: np.random.Generator, hit: bool, tries: int = 50
) -> Window | None:
    lo, hi = CLIP_LEN_S
    for _ in range(tries):
        length = int(rng.integers(lo, min(hi, spec.duration) + 1))
        if hit:
            first = max(0, int(spec.needle.start) - length + 1)
            last = min(spec.duration - length, int(np.ceil(spec.needle.end)) - 1)
            if last < first:
                continue
            start = int(rng.integers(first, last + 1))
        else:
            start = int(rng.integers(0, spec.duration - length + 1))
        w = Window(float(start), float(start + length))
        if (describe_clip(spec, w.start, w.end, w.nframes) != NOTHING) == hit:
            return w
    return None


def clip_windows(
    spec: VideoSpec, rng: np.random.Generator, hits: int
) -> tuple[list[Window], list[Window]]:
    """``hits`` hit windows and as many miss windows: the crop plan's own windows first (what a
    sub-agent sees at inference), then random clips."""
    plan = list(plan_windows(spec.duration))
    shows = [describe_clip(spec, w.start, w.end, w.nframes) != NOTHING for w in plan]
    hit = [w for w, s in zip(plan, shows) if s][:hits]
    miss = [plan[int(i)] for i in rng.permutation(len(plan)) if not shows[int(i)]][:hits]
    for found, want in ((hit, True), (miss, False)):
        while len(found) < hits:
            w = _random_clip(spec, rng, want)
            if w is None:
                raise DataError(
                    f"{spec.name}: no {'hit' if want else 'miss'} clip of {CLIP_LEN_S} s found; "
                    "the video is too short for the base's clips (raise min_duration)"
                )
            found.append(w)
    return hit, miss


def _clip_row(
    spec: VideoSpec, rel: str, q: Question, extra: ExtraInfo, w: Window, rid: str
) -> SFTRow:
    from paravt.data.synth.oracle import sub_messages

    part = VideoPart(rel, w.start, w.end, crop_nframes(w.start, w.end))
    msgs = sub_messages(q.question, part, describe_clip(spec, w.start, w.end, w.nframes))
    return SFTRow(rid, "sub", "sub", msgs, (rel,), extra)


def perception_rows(
    spec: VideoSpec,
    rel: str,
    questions: Sequence[Question],
    extras: Sequence[ExtraInfo],
    rng: np.random.Generator,
    hits: int,
) -> list[SFTRow]:
    """``hits`` hit clips and ``hits`` miss clips of one video (questions cycled)."""
    hit, miss = clip_windows(spec, rng, hits)
    out = []
    for tag, wins in (("h", hit), ("m", miss)):
        for j, w in enumerate(wins):
            k = j % len(questions)
            out.append(
                _clip_row(spec, rel, questions[k], extras[k], w, f"{extras[k].id}{SEE}{tag}{j}")
            )
    return out


def overview_row(rel: str, extra: ExtraInfo, n: int, suffix: str = "") -> SFTRow:
    """An ``n``-frame overview question → the bare answer (``extra`` holds question and answer)."""
    from paravt.data.synth.oracle import _split_marker

    part = VideoPart(rel, 0.0, float(extra.duration), n)
    user = Message("user", _split_marker(overview_prompt(extra.question, extra.options), part))
    return SFTRow(
        f"{extra.id}{OVQ}n{n}{suffix}",
        "main",
        "none",
        (user, Message("assistant", extra.answer)),
        (rel,),
        extra,
    )


def mcq_variants(
    spec: VideoSpec, extra: ExtraInfo, rng: np.random.Generator, k: int
) -> list[ExtraInfo]:
    """``k - 1`` more versions of an MCQ: the same needle, fresh distractors and option order."""
    from paravt.data.synth.questions import mcq

    out = []
    for _ in range(k - 1):
        q = mcq(spec.needle, rng)
        out.append(replace(extra, question=q.question, answer=q.answer, options=q.options))
    return out


def overview_rows(
    spec: VideoSpec,
    rel: str,
    extras: Sequence[ExtraInfo],
    rng: np.random.Generator,
    mcq_versions: int = MCQ_VARIANTS,
) -> list[SFTRow]:
    """Each question at n = 64 and at one smaller n of ``OVERVIEW_NS``; the MCQ at n = 64 also in
    ``mcq_versions - 1`` more versions (``mcq_variants``)."""
    rows = [overview_row(rel, e, n) for e in extras for n in (64, int(rng.choice(OVERVIEW_NS)))]
    for e in extras:
        if e.task == "mcq":
            rows += [
                overview_row(rel, v, 64, f"v{j}")
                for j, v in enumerate(mcq_variants(spec, e, rng, mcq_versions), 1)
            ]
    return rows


def is_perception_row(row: Row) -> TypeGuard[SFTRow]:
    """A clip row (``…-see-…``): a window's frames -> what appears (the alignment stage's)."""
    return isinstance(row, SFTRow) and SEE in row.id


def is_base_row(row: Row) -> TypeGuard[SFTRow]:
    from paravt.data.synth.drills import READ

    return isinstance(row, SFTRow) and (SEE in row.id or OVQ in row.id or READ in row.id)


def prior_traces(
    rows: Sequence[Row],
    *,
    tool_mix: float,
    habit: Habit,
    seed: int = 0,
    copies: int = 1,
) -> list[SFTRow]:
    """The base stage's training traces from a ``base.parquet`` (perception and overview rows as
    they are, the prompts turned into habit traces) or from an ``rl.parquet`` (habit traces
    only)."""
    from paravt.data.synth.prior import prior_rows

    prompts = [r for r in rows if isinstance(r, RLRow)]
    if not prompts:
        raise DataError(
            "the base stage's data holds no prompt (kind=rl) rows; point `data` at a "
            "ParaVT-Synth base.parquet (or rl.parquet)"
        )
    fixed = [r for r in rows if is_base_row(r)]
    return fixed + prior_rows(prompts, tool_mix=tool_mix, habit=habit, seed=seed, copies=copies)


def report_row(spec: VideoSpec, rel: str, q: Question, extra: ExtraInfo) -> SFTRow:
    """A held-out flash video's question in the strong base's native tool form (its prompt at
    n = ``REPORT_N``, a two-sentence think, a ``<tool_call>`` per window of the crop plan), with
    tool results that DISAGREE with the video (``swapped_report``); the target is a two-sentence
    think (the probe forces it: a greedy think of the base loops) and the answer the results
    give. A base that reads its tool response answers it, one that answers from the frames (or
    from memory) the truth."""
    shown, answer = swapped_report(spec, q, extra)
    system, user = main_prompt(spec, rel, q, REPORT_N, "parallel")
    rng = np.random.default_rng(0)
    turns = json_turns(shown, rng, Habit(2))
    final = Message("assistant", long_think(rng, 2) + answer)
    msgs = (system, user, *turns, final)
    return SFTRow(f"{extra.id}{REP}n{REPORT_N}", "main", "parallel", msgs, (rel,), extra)


def swapped_report(spec: VideoSpec, q: Question, extra: ExtraInfo) -> tuple[ExtraInfo, str]:
    """What ``report_row``'s tool results show (the ``ExtraInfo`` its windows are described from)
    and the answer they give: for the open question another colour (``scenes.other_color``); for
    the MCQ the colour of the option after the right one, answered by that option's letter; for
    the span the same flash half the video away (inside the video), answered by its
    ``[start, end]``."""
    needle = spec.needle
    if q.task == "tvg":
        half, length = extra.duration / 2, needle.end - needle.start
        # half the video on, inside it (a needle of ≤ 8 s, a video of ≥ 60 s: never the truth's)
        start = (
            min(needle.start + half, extra.duration - length)
            if needle.start < half
            else needle.start - half
        )
        moved = replace(
            extra,
            needle_start=start,
            needle_end=start + length,
            needle_description=needle.description,
        )
        return moved, span_text(start, start + length)
    if q.task == "mcq":
        texts = option_texts(q.options)
        letters = list(texts)
        answer = letters[(letters.index(q.answer) + 1) % len(letters)]
        colour = texts[answer]
    else:
        colour = answer = other_color(needle.color)
    return replace(extra, needle_description=replace(needle, color=colour).description), answer


def probe_rows(
    spec: VideoSpec,
    rel: str,
    questions: Sequence[Question],
    extras: Sequence[ExtraInfo],
    rng: np.random.Generator,
) -> list[SFTRow]:
    """A held-out video's probe rows: ``CLIPS_PER_VIDEO`` hit clips (the crop plan's hit windows
    first) and as many misses, its MCQ and open question at n = 4 and 64, and for a flash that
    the ``REPORT_N``-frame overview misses (frames and report would disagree otherwise) its
    questions with a swapped tool report (``report_row``); the assistant message is the target."""
    rows: list[SFTRow] = perception_rows(spec, rel, questions, extras, rng, CLIPS_PER_VIDEO)
    rows += [overview_row(rel, e, n) for e in extras if e.task in ("mcq", "oe") for n in (4, 64)]
    if spec.needle.kind == "flash" and not caught_by_overview(spec, REPORT_N):
        rows += [report_row(spec, rel, q, e) for q, e in zip(questions, extras)]
    return rows


def question_of(e: ExtraInfo) -> Question:
    """The question an ``ExtraInfo`` holds."""
    return Question(e.task, e.question, e.answer, tuple(e.options) if e.options else None)


def video_rows(
    spec: VideoSpec,
    rel: str,
    prompts: Sequence[RLRow],
    rng: np.random.Generator,
    hits: int,
    *,
    held_out: bool = False,
) -> list[Row]:
    """One video's rows: for training, its perception clips, overview QA and prompts; for a
    held-out video (``held_out``), its probe rows (``probe_rows``)."""
    extras = [p.extra_info for p in prompts]
    questions = [question_of(e) for e in extras]
    if held_out:
        return list(probe_rows(spec, rel, questions, extras, rng))
    from paravt.data.synth.drills import drill_rows

    oe = next(
        (e for e in extras if e.task == "oe"), extras[0]
    )  # its question names no colour or digit
    return [
        *perception_rows(spec, rel, questions, extras, rng, hits),
        *overview_rows(spec, rel, extras, rng),
        *drill_rows(oe, rng, (spec.needle.kind,), DRILLS_PER_VIDEO, REPORT_DRILLS_PER_VIDEO),
        *prompts,
    ]
