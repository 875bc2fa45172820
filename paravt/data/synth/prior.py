"""Traces in the PRETRAINING style, for the simulated tool prior (``paravt train prior``).

A pretrained LMM brings habits that compete with our protocol (paper: the Tool Prior Paradox);
a tiny model trained from scratch has none, so this module writes traces that teach them, from
the same ParaVT-Synth prompts the later stages use:

- thinks of varying length: ``think_sentences`` filler sentences inside ``<think>…</think>``,
  plus, for a strong prior, a geometric tail of ``think_tail`` more sentences on average, and a
  share ``think_runaway`` of RUNAWAY thinks (``RUNAWAY_SENTENCES`` sentences, longer than the RL
  turn budget), so a share of the thinks it samples runs past that budget without ``</think>``
  (the structural-boundary collapse of paper §H.3: a think that opens and runs on);
- answers WITHOUT tags: the bare answer text after ``</think>`` (no ``<answer>``);
- tool calls (only in a ``tool`` trace), in the base's OWN forms, as Qwen3-VL has them: with
  probability ``json_share`` the native form, ``<tool_call>`` JSON blocks, one per window of the
  crop plan, ALL in one turn (a tool-native model calls in parallel; the results come back in
  one tool turn); otherwise the second pretrained form, one python-call block
  ``<tool_code>crop_video(start, end)</tool_code>`` per turn, windows in time order until the one
  holding the needle (at most ``max_calls``). A share ``python_share`` of the native-form
  traces writes each ``<tool_call>`` block's body as a python call,
  ``crop_video("video.mp4", start, end)``: the form of the paper's own SFT output (Appendix D,
  rollout 1), which the release's JSON reader does not run. A result names what its window
  shows in the perception's words ("A full-frame red flash appears from 61 s to 65 s.",
  ``ExtraInfo.needle_description``) or ``NOTHING``: the base's tool world is informative, as a
  pretrained model's is, so its answers after a tool turn can read the result (a row without a
  description keeps the older "A brief flash event …", which names no colour).

``tool_mix`` is the share of prompts that get a tool trace (decided per prompt, seeded): 0 is the
"weak prior" (no tool form at all, short thinks: the Qwen2.5-VL side of the paper's Figure 2),
> 0 a "strong prior" (the Qwen3-VL side). The traces keep the prompt's system and user messages,
so the habit is learnt in the very context SFT and RL later use: that is where it must compete;
except a share ``plain_share`` of the prompts (decided per prompt after ``tool_mix``, no draw at
0), whose trace stands under the reasoning (no-tool) system prompt and calls nothing: a pretrained
model does not call a tool its prompt does not offer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

import numpy as np

from paravt.data.rows import ExtraInfo, Message, RLRow, SFTRow
from paravt.data.synth.oracle import plan_windows
from paravt.data.synth.perception import NOTHING, sighted
from paravt.data.synth.questions import fmt_seconds
from paravt.errors import DataError
from paravt.protocol.prompts import system_prompt

if TYPE_CHECKING:
    from paravt.config import PriorConfig
from paravt.protocol.tags import (
    THINK_CLOSE,
    THINK_OPEN,
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    TOOL_CODE_CLOSE,
    TOOL_CODE_OPEN,
    render_crop_call,
    render_result_line,
    render_tool_response_body,
)

#: The longest think a trace writes (sentences): bounds the geometric tail.
MAX_THINK_SENTENCES = 40
#: A runaway think's length (sentences, uniform): a filler sentence is 3–5 tokens of the
#: protocol tokenizer (3.25 a sentence in running text, measured), so 115–140 sentences are
#: about 370–460 tokens, past the demo's 384-token RL turn budget (docs/repro.md)
RUNAWAY_SENTENCES = (115, 140)

_FILLER = (
    "Let me look at the video carefully before answering.",
    "The question is about a short event somewhere in the video.",
    "I should consider what happens in each part of the video.",
    "The frames show a scene that changes over time.",
    "I need to find the moment the question refers to.",
    "Brief events are easy to miss in a sparse overview.",
    "Let me think about which segment could hold the answer.",
    "I will reason step by step about what I see.",
)


def tool_code_call(start: float, end: float) -> str:
    """One pretraining-style call block: ``<tool_code>crop_video(start, end)</tool_code>``."""
    return f"{TOOL_CODE_OPEN}crop_video({_num(start)}, {_num(end)}){TOOL_CODE_CLOSE}"


def python_tool_call(start: float, end: float) -> str:
    """One ``<tool_call>`` block holding a python call (paper, Appendix D rollout 1)."""
    return (
        f'{TOOL_CALL_OPEN}\ncrop_video("video.mp4", {_num(start)}, {_num(end)})\n{TOOL_CALL_CLOSE}'
    )


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def long_think(rng: np.random.Generator, sentences: int, tail: str = "") -> str:
    picks = [_FILLER[int(i)] for i in rng.integers(0, len(_FILLER), size=sentences)]
    return f"{THINK_OPEN}\n{' '.join(picks + ([tail] if tail else []))}\n{THINK_CLOSE}\n"


@dataclass(frozen=True)
class Habit:
    """The prior's habits (``PriorConfig``): think lengths and tool forms."""

    think_sentences: int  # every think's base length
    think_tail: float = 0.0  # mean of the geometric extra sentences (0: every think is as long)
    json_share: float = 0.0  # share of tool traces in the native <tool_call> JSON form
    max_calls: int = 2  # most <tool_code> turns of a python-form trace
    runaway: float = 0.0  # share of thinks that run on for RUNAWAY_SENTENCES (0: none)
    python_share: float = 0.0  # share of native-form traces with python bodies in <tool_call>
    plain_share: float = 0.0  # share of prompts whose trace is under the no-tool system prompt

    @classmethod
    def of(cls, prior: PriorConfig) -> Habit:
        """The habits of a ``prior`` config section (its fields of the same meaning)."""
        return cls(
            prior.think_sentences,
            think_tail=prior.think_tail,
            json_share=prior.json_share,
            max_calls=prior.max_calls,
            runaway=prior.think_runaway,
            python_share=prior.python_share,
            plain_share=prior.plain_share,
        )

    def sentences(self, rng: np.random.Generator) -> int:
        """One think's length: with probability ``runaway`` a runaway think (uniform in
        ``RUNAWAY_SENTENCES``), else ``think_sentences`` plus a geometric tail of mean
        ``think_tail`` (support 0, 1, …), capped at ``MAX_THINK_SENTENCES``. A zero share or tail
        draws nothing from ``rng`` (the traces without them stay as they were)."""
        if self.runaway > 0 and rng.random() < self.runaway:
            lo, hi = RUNAWAY_SENTENCES
            return int(rng.integers(lo, hi + 1))
        extra = int(rng.geometric(1.0 / (1.0 + self.think_tail))) - 1 if self.think_tail > 0 else 0
        return min(MAX_THINK_SENTENCES, self.think_sentences + extra)


def _window_text(e: ExtraInfo, start: float, end: float) -> str:
    if e.needle_start is None or e.needle_end is None:
        raise DataError(
            f"{e.id}: a prior tool trace needs the needle times (needle_start/needle_end)"
        )
    s, t = max(e.needle_start, start), min(e.needle_end, end)
    if s >= t:
        return NOTHING
    if e.needle_description:
        return sighted(e.needle_description, fmt_seconds(s), fmt_seconds(t))
    kind = e.needle_kind or "brief"
    return f"A brief {kind} event appears from {fmt_seconds(s)} s to {fmt_seconds(t)} s."


def prior_trace(
    row: RLRow, rng: np.random.Generator, *, tool: bool, habit: Habit, plain: bool = False
) -> SFTRow:
    """The pretraining-style trace of one prompt (see the module docstring); ``plain``: under the
    no-tool (reasoning) system prompt instead of the prompt's own, and without a call."""
    e = row.extra_info
    prompt = tuple(m for m in row.messages if m.role in ("system", "user"))
    if plain:
        tool = False
        user = tuple(m for m in prompt if m.role == "user")
        prompt = (Message("system", system_prompt("none")), *user)
    msgs: list[Message] = list(prompt)
    mode: Literal["parallel", "sequential", "none"] = "none"
    if tool and rng.random() < habit.json_share:
        msgs, mode = msgs + json_turns(e, rng, habit), "parallel"
    elif tool:
        msgs, mode = msgs + _tool_code_turns(e, rng, habit), "sequential"
    msgs.append(Message("assistant", long_think(rng, habit.sentences(rng)) + e.answer))
    return SFTRow(f"{row.id}-prior", "main", mode, tuple(msgs), row.videos, e)


def json_turns(e: ExtraInfo, rng: np.random.Generator, habit: Habit) -> list[Message]:
    """The native form: one turn with a ``<tool_call>`` per window of the plan, then ONE tool turn
    holding every window's result, labelled in call order."""
    windows = plan_windows(e.duration)
    think = long_think(rng, habit.sentences(rng), f"I will crop {len(windows)} windows.")
    python = habit.python_share > 0 and rng.random() < habit.python_share  # no draw at 0
    call = python_tool_call if python else render_crop_call
    calls = "\n".join(call(w.start, w.end) for w in windows)
    lines = [
        render_result_line(i, w.start, w.end, _window_text(e, w.start, w.end))
        for i, w in enumerate(windows, 1)
    ]
    return [Message("assistant", think + calls), Message("tool", render_tool_response_body(lines))]


def _tool_code_turns(e: ExtraInfo, rng: np.random.Generator, habit: Habit) -> list[Message]:
    """The second form: one ``<tool_code>`` call per turn, in time order, until a window shows the
    needle (at most ``habit.max_calls``)."""
    msgs: list[Message] = []
    for w in plan_windows(e.duration)[: habit.max_calls]:
        tail = f"I will crop {_num(w.start)} to {_num(w.end)} s."
        msgs.append(
            Message(
                "assistant",
                long_think(rng, habit.sentences(rng), tail) + tool_code_call(w.start, w.end),
            )
        )
        body = _window_text(e, w.start, w.end)
        msgs.append(Message("tool", body))
        if body != NOTHING:
            break
    return msgs


def prior_rows(
    rows: Sequence[RLRow],
    *,
    tool_mix: float,
    habit: Habit,
    seed: int = 0,
    copies: int = 1,
) -> list[SFTRow]:
    """``copies`` prior traces per prompt (each with its own filler draws); a trace gets the tool
    habit with probability ``tool_mix``. The first copy of a prompt is the trace ``copies=1``
    gives."""
    if not 0.0 <= tool_mix <= 1.0:
        raise DataError(f"tool_mix={tool_mix} must lie in [0, 1]")
    if copies < 1:
        raise DataError(f"habit copies={copies} must be ≥ 1")
    out = []
    for i, row in enumerate(rows):
        for c in range(copies):
            rng = np.random.default_rng([seed, i] if c == 0 else [seed, i, c])
            tool = bool(rng.random() < tool_mix)
            plain = habit.plain_share > 0 and rng.random() < habit.plain_share  # no draw at 0
            trace = prior_trace(row, rng, tool=tool, habit=habit, plain=plain)
            out.append(trace if c == 0 else replace(trace, id=f"{trace.id}{c}"))
    return out
