"""Traces in the PRETRAINING style, for the simulated tool prior (``paravt train prior``).

A pretrained LMM brings habits that compete with our protocol (paper: the Tool Prior Paradox);
a tiny model trained from scratch has none, so this module writes traces that teach them, from
the same ParaVT-Synth prompts (``rl.parquet`` rows) the later stages use:

- long thinks: ``think_sentences`` filler sentences inside ``<think>…</think>``;
- answers WITHOUT tags: the bare answer text after ``</think>`` (no ``<answer>``);
- tool calls in the pretraining style (only in a ``tool`` trace): ONE python-call block
  ``<tool_code>crop_video(start, end)</tool_code>`` per turn, windows in time order until the one
  holding the needle (at most ``max_calls``), each answered by a text tool response.

``tool_mix`` is the share of prompts that get a tool trace (decided per prompt, seeded): 0 is the
"weak prior" (no tool habit at all: the Qwen2.5-VL side of the paper's Figure 2), > 0 a "strong
prior" (the Qwen3-VL side). The traces keep the prompt's system and user messages, so the habit
is learnt in the very context SFT and RL later use: that is where it must compete.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from paravt.data.schema import ExtraInfo, Message, RLRow, SFTRow
from paravt.data.synth.oracle import NOTHING, plan_windows
from paravt.data.synth.questions import fmt_seconds
from paravt.errors import DataError
from paravt.protocol.tags import THINK_CLOSE, THINK_OPEN, TOOL_CODE_CLOSE, TOOL_CODE_OPEN

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


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def long_think(rng: np.random.Generator, sentences: int, tail: str = "") -> str:
    picks = [_FILLER[int(i)] for i in rng.integers(0, len(_FILLER), size=sentences)]
    return f"{THINK_OPEN}\n{' '.join(picks + ([tail] if tail else []))}\n{THINK_CLOSE}\n"


def _window_text(e: ExtraInfo, start: float, end: float) -> str:
    if e.needle_start is None or e.needle_end is None:
        raise DataError(
            f"{e.id}: a prior tool trace needs the needle times (needle_start/needle_end)"
        )
    s, t = max(e.needle_start, start), min(e.needle_end, end)
    if s >= t:
        return NOTHING
    kind = e.needle_kind or "brief"
    return f"A brief {kind} event appears from {fmt_seconds(s)} s to {fmt_seconds(t)} s."


def prior_trace(
    row: RLRow, rng: np.random.Generator, *, tool: bool, think_sentences: int, max_calls: int = 2
) -> SFTRow:
    """The pretraining-style trace of one prompt (see the module docstring)."""
    e = row.extra_info
    prompt = tuple(m for m in row.messages if m.role in ("system", "user"))
    msgs: list[Message] = list(prompt)
    if tool:
        for w in plan_windows(e.duration)[:max_calls]:
            think = long_think(
                rng, think_sentences, f"I will crop {_num(w.start)} to {_num(w.end)} s."
            )
            msgs.append(Message("assistant", think + tool_code_call(w.start, w.end)))
            body = _window_text(e, w.start, w.end)
            msgs.append(Message("tool", body))
            if body != NOTHING:
                break
    msgs.append(Message("assistant", long_think(rng, think_sentences) + e.answer))
    mode = "sequential" if tool else "none"
    return SFTRow(f"{row.id}-prior", "main", mode, tuple(msgs), row.videos, e)


def prior_rows(
    rows: Sequence[RLRow],
    *,
    tool_mix: float,
    think_sentences: int,
    seed: int = 0,
    max_calls: int = 2,
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
            trace = prior_trace(
                row, rng, tool=tool, think_sentences=think_sentences, max_calls=max_calls
            )
            out.append(trace if c == 0 else replace(trace, id=f"{trace.id}{c}"))
    return out
