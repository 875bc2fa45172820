"""The ORACLE that writes ParaVT-Synth SFT traces (docs/ARCHITECTURE.md §9).

Parallel trace (mode ``parallel``, the tool system prompt): a TOOL trace whatever the row's
n-frame overview shows (imitation data, as the paper's tool traces: ``synth.sft_mix`` decides which
prompts get one and which a direct trace). It splits [0, D] into K disjoint windows and calls them
all in one turn; the tool turn holds the K labelled results (`render_result_line`): windows whose
sub-agent frames show the needle report it with the time stamps of those frames
(`perception.describe_clip`), the others report that nothing brief appears; the final turn
answers from the summaries.

Final turn after a tool response (parallel and sequential): a think that says only what the
question asks for (`asks`), then the answer, read from the evidence the tool turn put in the
context (the summaries, or the last window's frames). The paper's SFT output answers bare after
its calls (Appendix D, rollouts 1 and 3); the one-sentence think stays because the think prefix
opens every turn. A think that first copied the reporting window's summary ("Window [3] reports:
A full-frame green flash appears from 74.5 s to 79.0 s. The answer is green.") made the answer
slow to learn: from the demo's base at the SFT's lr 2e-4, text only, 0.35 of held-out open
answers right after 300 steps of such turns against 0.98 after 200 with the one-sentence think
(docs/repro-log.md, 2026-12-06 (f)).

Window sizing: a sub-agent samples ``min(16, round(W·1 fps))`` frames of its window W with the
target rule t_i = start + (i + 0.5)·W/nframes, so the spacing of its frames is max(1, W/16) s.
Windows are at most `MAX_WINDOW_S` = 40 s long (spacing ≤ 2.5 s < the 3 s minimum needle), so no
window can miss a needle that lies inside it; K = max(2, ceil(D / 40)) ∈ [2, 8] for D ≤ 300 s, which
fits K_max = 8 and always covers the WHOLE video (no guess about "the plausible part" is needed).
The builder asserts, per trace, that some window's sampled frames really show the needle.

Sequential trace (mode ``sequential``): one call per turn, windows in time order, the cropped
frames shown in the tool turn as the episode composes it (`sequential_tool_body`); it stops at the
first window showing the needle. Only written when
that takes at most ``seq_max_calls`` calls (default 2: two tool rounds and the answer fit the
default ``rollout.max_turns`` = 3 tool rounds).

Direct trace (mode ``none``, the reasoning system prompt): no tools, think then answer, written
only when the overview shows the needle; its think says what the overview shows (the decision
not to call rests on it).

Assistant messages of main traces start with ``THINK_PREFIX`` (see `paravt.data.schema`). Think
texts are short fixed templates so a tiny tokenizer/model learns them fast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from paravt.data.rows import ExtraInfo, Message, Part, SFTRow, TextPart, VideoPart
from paravt.data.synth.perception import NOTHING, describe_clip
from paravt.data.synth.questions import Question, fmt_seconds, option_texts
from paravt.data.synth.scenes import VideoSpec, overview_indices
from paravt.errors import DataError
from paravt.protocol.tags import (
    render_answer,
    render_crop_call,
    render_result_line,
    render_tool_response_body,
    render_tool_turn,
    with_media_marker,
)
from paravt.video.budget import frame_count, smart_resize
from paravt.video.types import Frames

MAX_WINDOW_S = 40.0
CROP_FPS = 1.0
CROP_MAX_FRAMES = 16
CROP_MAX_PIXELS = 224 * 224


@dataclass(frozen=True)
class Window:
    start: float
    end: float

    @property
    def nframes(self) -> int:
        return crop_nframes(self.start, self.end)


def crop_nframes(
    start: float, end: float, fps: float = CROP_FPS, max_frames: int = CROP_MAX_FRAMES
) -> int:
    """Frames a sub-agent sees of [start, end] (`paravt.video.frame_count` with the crop tool's
    fps and max_frames, docs/ARCHITECTURE.md §2)."""
    return frame_count(start, end, nframes=None, fps=fps, max_frames=max_frames)


def plan_windows(
    duration: float, *, max_window: float = MAX_WINDOW_S, k_max: int = 8
) -> tuple[Window, ...]:
    """K = max(2, ceil(D / max_window)) equal windows with whole-second bounds covering [0, D]."""
    k = max(2, math.ceil(duration / max_window))
    if k > k_max:
        raise DataError(
            f"a {duration} s video needs {k} windows of ≤ {max_window} s but k_max={k_max}; "
            "shorten the videos or raise k_max"
        )
    bounds = [round(j * duration / k) for j in range(k + 1)]
    return tuple(Window(float(a), float(b)) for a, b in zip(bounds, bounds[1:]))


def sub_summary(spec: VideoSpec, w: Window) -> str:
    """What an ideal sub-agent reports for window ``w``: the frame-supported description of its
    sampled frames (``perception.describe_clip``: the stamps of the frames that show the needle,
    the same form the simulated pretrained base learns), or ``NOTHING``."""
    return describe_clip(spec, w.start, w.end, w.nframes)


def _split_marker(text: str, part: VideoPart) -> tuple[Part, ...]:
    if text.count("<video>") != 1:
        raise DataError(
            f"prompt text must hold exactly one <video> marker, got {text.count('<video>')}"
        )
    before, after = text.split("<video>")
    return tuple(
        p
        for p in (TextPart(before) if before else None, part, TextPart(after) if after else None)
        if p
    )


def main_prompt(
    spec: VideoSpec, rel: str, q: Question, nframes: int, mode: str
) -> tuple[Message, Message]:
    from paravt.protocol import prompts

    tools = () if mode == "none" else (prompts.CROP_VIDEO_SPEC,)
    system = Message("system", prompts.system_prompt(mode, tools))  # type: ignore[arg-type]
    text = prompts.user_prompt(
        q.question,
        q.options,
        duration=float(spec.duration),
        nframes=nframes,
        fps=float(spec.fps),
        size=(spec.width, spec.height),
    )
    user = Message("user", _split_marker(text, VideoPart(rel, 0.0, float(spec.duration), nframes)))
    return system, user


def overview_hit_time(spec: VideoSpec, n: int) -> float | None:
    needle = set(spec.needle_frames())
    hits = [k for k in overview_indices(spec, n) if k in needle]
    return hits[0] / spec.fps if hits else None


#: The first sentence of every main-agent think: what the question asks for, written right after the
#: question, so the answer that comes after the think looks up a sentence of its own turn instead of
#: the question far behind it (measured: a 150-step cold start without it answered 48 of 48 open and
#: MCQ questions in the [start, end] form, docs/repro.md).
ASKS = {
    "mcq": "The question asks for the option letter.",
    "oe": "The question asks for the colour.",
    "tvg": "The question asks for the time span.",
}


def asks(q: Question, spec: VideoSpec) -> str:
    """The think's first sentence for ``q`` (after a tool response, the whole final think; an
    open question about a digit or shape asks for the event)."""
    if q.task == "oe" and spec.needle.kind != "flash":
        return "The question asks for the event."
    return ASKS[q.task]


def _direct_think(spec: VideoSpec, q: Question, seen: str) -> str:
    """A direct answer's think: what was asked, what was seen (``seen``, one sentence), and the
    step from it to the answer: the option naming the needle for an MCQ, the colour (or label)
    for an open question, nothing more for a time span (the answer is the span)."""
    if q.task == "mcq" and q.options:
        right = option_texts(q.options)[q.answer]
        step = f" Option {q.answer} is {right}."
    elif q.task == "oe":
        step = f" The answer is {q.answer}."
    else:
        step = ""
    return f"{asks(q, spec)} {seen}{step}"


def parallel_trace(
    spec: VideoSpec, rel: str, q: Question, extra: ExtraInfo
) -> tuple[SFTRow, tuple[Window, ...]]:
    """The oracle's parallel-mode tool trace at ``extra.nframes``, whatever the overview shows (its
    think says nothing about the overview); returns the row and the windows called."""
    system, user = main_prompt(spec, rel, q, extra.nframes, "parallel")
    windows = plan_windows(spec.duration)
    calls = [render_crop_call(w.start, w.end) for w in windows]
    think1 = f"{asks(q, spec)} I will search {len(windows)} windows in parallel for the evidence."
    summaries = [sub_summary(spec, w) for w in windows]
    found = [i for i, s in enumerate(summaries) if s != NOTHING]
    if not found:
        raise DataError(
            f"{spec.name}: no window shows the needle at {spec.needle}; the window plan is wrong"
        )
    lines = [
        render_result_line(i + 1, w.start, w.end, s)
        for i, (w, s) in enumerate(zip(windows, summaries))
    ]
    msgs = (
        system,
        user,
        Message("assistant", render_tool_turn(think1, calls)),
        Message("tool", render_tool_response_body(lines)),
        Message("assistant", render_answer(asks(q, spec), q.answer)),
    )
    return SFTRow(f"{extra.id}-par", "main", "parallel", msgs, (rel,), extra), windows


def direct_trace(spec: VideoSpec, rel: str, q: Question, extra: ExtraInfo) -> SFTRow | None:
    """Direct-answer trace (no tools), only when the overview at ``extra.nframes`` shows the
    needle."""
    t = overview_hit_time(spec, extra.nframes)
    if t is None:
        return None
    system, user = main_prompt(spec, rel, q, extra.nframes, "none")
    think = _direct_think(
        spec, q, f"The overview shows {spec.needle.description} at {fmt_seconds(t)} s."
    )
    msgs = (system, user, Message("assistant", render_answer(think, q.answer)))
    return SFTRow(f"{extra.id}-dir", "main", "none", msgs, (rel,), extra)


def sequential_trace(
    spec: VideoSpec, rel: str, q: Question, extra: ExtraInfo, *, seq_max_calls: int = 2
) -> SFTRow | None:
    """One call per turn in time order until a window shows the needle (None if that needs more
    than ``seq_max_calls`` calls, or if the overview already shows it)."""
    if overview_hit_time(spec, extra.nframes) is not None:
        return None
    windows = plan_windows(spec.duration)
    first = next(i for i, w in enumerate(windows) if sub_summary(spec, w) != NOTHING)
    if first + 1 > seq_max_calls:
        return None
    system, user = main_prompt(spec, rel, q, extra.nframes, "sequential")
    msgs: list[Message] = [system, user]
    for i, w in enumerate(windows[: first + 1]):
        think = (
            f"{asks(q, spec)} The overview shows no brief event. I will check the video window "
            "by window."
            if i == 0
            else "Nothing brief appeared there. I will check the next window."
        )
        msgs.append(
            Message("assistant", render_tool_turn(think, [render_crop_call(w.start, w.end)]))
        )
        part = VideoPart(rel, w.start, w.end, w.nframes)
        msgs.append(Message("tool", _split_marker(sequential_tool_body(spec, w), part)))
    msgs.append(Message("assistant", render_answer(asks(q, spec), q.answer)))
    return SFTRow(f"{extra.id}-seq", "main", "sequential", tuple(msgs), (rel,), extra)


def sequential_tool_body(
    spec: VideoSpec, w: Window, *, crop_max_pixels: int = CROP_MAX_PIXELS, size_factor: int = 32
) -> str:
    """The sequential-mode tool turn for one crop exactly as the episode composes it: one result
    line ``[1] MM:SS–MM:SS: <crop tool text> <video>`` (the crop tool's `window_text`)."""
    from paravt.tools.base import window_text

    h, w_px = smart_resize(spec.height, spec.width, max_pixels=crop_max_pixels, factor=size_factor)
    frames = Frames(
        np.zeros((w.nframes, h, w_px, 3), np.uint8), tuple(0.0 for _ in range(w.nframes))
    )
    body = with_media_marker(window_text(frames, w.start, w.end))
    return render_tool_response_body([render_result_line(1, w.start, w.end, body)])


def sub_messages(question: str, part: VideoPart, reply: str) -> tuple[Message, ...]:
    """A sub-agent row's messages in the default sub-agent prompt (``SUBAGENT_PROMPT``:
    ``prompts.subagent_messages``) on the window ``part`` → ``reply``."""
    from paravt.config import SUBAGENT_PROMPT
    from paravt.protocol import prompts

    system, user = prompts.subagent_messages(
        SUBAGENT_PROMPT, question, part.video_start, part.video_end
    )
    head = () if system is None else (Message("system", system),)
    return (*head, Message("user", _split_marker(user, part)), Message("assistant", reply))


def sub_row(
    spec: VideoSpec, rel: str, q: Question, extra: ExtraInfo, w: Window, index: int
) -> SFTRow:
    """A sub-agent training row: the sub-agent prompt on the window's video → the summary."""
    part = VideoPart(rel, w.start, w.end, w.nframes)
    msgs = sub_messages(q.question, part, sub_summary(spec, w))
    return SFTRow(f"{extra.id}-sub{index}", "sub", "sub", msgs, (rel,), extra)
