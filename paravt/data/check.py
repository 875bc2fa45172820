"""`paravt data check`: strict rules for SFT traces (what we train on must be what we want).

Rules (a row fails when any fires; each violation names its rule):

- ``json``: every ``<tool_call>`` body is STRICT JSON ``{"name": str, "arguments": {...}}`` (no
  trailing commas, no single quotes, no python-style calls; the parser tolerates those in model
  output, training data must not teach them), the tool is ``crop_video`` (or ``frame_select`` in a
  sequential trace: EVA-style rows), and it is closed.
- ``window``: ``start_time`` and ``end_time`` are numbers with 0 ≤ start < end ≤ duration.
- ``duplicate``: no window is called twice in one trace (``frame_select``: no identical call twice).
- ``budget`` (the EVA reflector's rules): the frames a call gets — `paravt.video.frame_count` at
  the call's ``fps`` (default the crop tool's 1 fps) capped by its ``num_frames``/``max_frames``
  (default 16) — must be ≥ ``min_frames`` (floor 4: a crop that yields fewer frames cannot show
  more than the overview did), and the sampling rate must be ≤ ``max_fps`` (1 fps: the rate the
  sub-agent budget of 16 frames is designed for). A ``frame_select`` call asks for its own
  ``nframes``: only the rate rule applies to it (nframes / window ≤ max_fps). Video parts of
  messages follow the same rate rule
  (nframes / window length ≤ max_fps; the whole-video overview is exempt).
- ``tags``: each assistant message of a main trace is ``<think>\\n…</think>`` followed by either
  tool calls only or one ``<answer>…</answer>`` (nothing else after it); the last assistant
  message answers; a turn with calls is followed by a tool message and a turn that answers ends
  the trace; sequential traces have one call per turn and parallel ones at most ``k_max``.
- ``tool_response``: the tool message after K calls has K result lines ``[1]``…``[K]``, each
  labelled with its call's window (`render_result_line`).
- ``answer``: the final answer equals the row's ground truth (oracle traces must be right).
- ``duplicate_row`` (the file, not one row): each id is written once; one violation per id written
  more than once, with its count.

Before these rules, every row is screened (`paravt.data.screen`, as every command that reads rows
does): an error row is one violation whose rule is its cause (``too_large``, ``malformed``,
``empty_messages``, ``no_video``, ``video_outside_root``, ``video_missing``, ``video_unreadable``,
``video_too_short``, ``video_window``; ``answer`` for a missing, empty or NaN ground truth); each
distinct video is probed once.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from paravt.data.rows import Message, Row, SFTRow, VideoPart
from paravt.data.screen import RowError
from paravt.protocol import tags as T
from paravt.video.budget import frame_count

MIN_FRAMES = 4
MAX_FPS = 1.0
_CALL_RE = re.compile(re.escape(T.TOOL_CALL_OPEN) + r"(.*?)" + re.escape(T.TOOL_CALL_CLOSE), re.S)
_ANSWER_RE = re.compile(re.escape(T.ANSWER_OPEN) + r"(.*?)" + re.escape(T.ANSWER_CLOSE), re.S)
_TURN_RE = re.compile(
    r"^"
    + re.escape(T.THINK_PREFIX)
    + r"(?P<think>(?:(?!<).)+?)\n"
    + re.escape(T.THINK_CLOSE)
    + r"\n"
    r"(?P<rest>.*)$",
    re.S,
)


@dataclass(frozen=True)
class Violation:
    row: str
    rule: str
    detail: str


@dataclass(frozen=True)
class CheckReport:
    rows: int
    violations: tuple[Violation, ...] = field(default_factory=tuple)
    duplicates: tuple[tuple[str, int], ...] = ()  # (id, times written) of each id written twice+

    @property
    def failed_rows(self) -> int:
        return len({v.row for v in self.violations})

    @property
    def by_rule(self) -> dict[str, int]:
        return dict(sorted(Counter(v.rule for v in self.violations).items()))

    @property
    def ok(self) -> bool:
        return not self.violations


@dataclass(frozen=True)
class Call:
    start: float | None
    end: float | None
    raw: str
    tool: str = "crop_video"


def _strict_calls(
    text: str, row: str, out: list[Violation], tools: tuple[str, ...] = ("crop_video",)
) -> list[Call]:
    calls: list[Call] = []
    if text.count(T.TOOL_CALL_OPEN) != text.count(T.TOOL_CALL_CLOSE):
        out.append(Violation(row, "json", "unclosed <tool_call>"))
    for m in _CALL_RE.finditer(text):
        body = m.group(1).strip()
        try:
            obj = json.loads(body)
        except json.JSONDecodeError as e:
            out.append(
                Violation(row, "json", f"call body is not strict JSON ({e.msg}): {body[:60]!r}")
            )
            calls.append(Call(None, None, body))
            continue
        if not (
            isinstance(obj, dict)
            and isinstance(obj.get("name"), str)
            and isinstance(obj.get("arguments"), dict)
        ):
            out.append(
                Violation(
                    row, "json", f'call must be {{"name": str, "arguments": {{}}}}: {body[:60]!r}'
                )
            )
            calls.append(Call(None, None, body))
            continue
        if obj["name"] not in tools:
            out.append(
                Violation(
                    row, "json", f"unknown tool {obj['name']!r}; traces use {' or '.join(tools)}"
                )
            )
        args = obj["arguments"]
        start, end = args.get("start_time"), args.get("end_time")
        ok = isinstance(start, (int, float)) and isinstance(end, (int, float))
        ok = ok and not isinstance(start, bool) and not isinstance(end, bool)
        calls.append(
            Call(float(start) if ok else None, float(end) if ok else None, body, str(obj["name"]))
        )
        if obj["name"] == "frame_select":
            _rate(args, row, out)
        else:
            _budget(args, row, out)
    return calls


def _window(args: dict[str, Any]) -> tuple[float, float] | None:
    """A call's (start, end) when both are numbers and end > start."""
    s, e = args.get("start_time"), args.get("end_time")
    if not isinstance(s, (int, float)) or not isinstance(e, (int, float)) or e <= s:
        return None
    return s, e


def _budget(args: dict[str, Any], row: str, out: list[Violation]) -> None:
    if (window := _window(args)) is None:
        return
    s, e = window
    fps = args.get("fps", 1.0)
    cap = args.get("num_frames", args.get("max_frames", 16))
    if not isinstance(fps, (int, float)) or fps <= 0 or not isinstance(cap, int) or cap <= 0:
        out.append(
            Violation(row, "budget", f"fps={fps!r} / num_frames={cap!r} must be positive numbers")
        )
        return
    n = frame_count(float(s), float(e), nframes=None, fps=float(fps), max_frames=cap)
    if n < MIN_FRAMES:
        out.append(
            Violation(row, "budget", f"window {s}-{e} s yields {n} frames < floor {MIN_FRAMES}")
        )
    if n / (e - s) > MAX_FPS + 1e-9:
        out.append(
            Violation(row, "budget", f"window {s}-{e} s samples {n / (e - s):.2f} fps > {MAX_FPS}")
        )


def _rate(args: dict[str, Any], row: str, out: list[Violation]) -> None:
    if (window := _window(args)) is None:
        return
    s, e = window
    n = args.get("nframes")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        out.append(
            Violation(row, "budget", f"frame_select nframes={n!r} must be a positive integer")
        )
    elif n / (e - s) > MAX_FPS + 1e-9:
        out.append(
            Violation(
                row, "budget", f"frame_select {s}-{e} s asks {n / (e - s):.2f} fps > {MAX_FPS}"
            )
        )


def _check_windows(
    calls: Sequence[Call], duration: float, row: str, seen: set, out: list[Violation]
) -> None:
    for c in calls:
        if c.start is None or c.end is None:
            if "{" in c.raw:
                out.append(
                    Violation(
                        row, "window", f"call lacks numeric start_time/end_time: {c.raw[:60]!r}"
                    )
                )
            continue
        if not 0 <= c.start < c.end <= duration + 1e-6:
            out.append(
                Violation(
                    row,
                    "window",
                    f"window {c.start:g}-{c.end:g} s not inside [0, {duration:g}] with start < end",
                )
            )
        # a frame_select rescan of a window at another density or resolution is not a repeat (EVA)
        key = (round(c.start, 3), round(c.end, 3)) + ((c.raw,) if c.tool == "frame_select" else ())
        if key in seen:
            out.append(Violation(row, "duplicate", f"window {c.start:g}-{c.end:g} s called twice"))
        seen.add(key)


def _check_tool_message(
    msg: Message | None, calls: Sequence[Call], row: str, out: list[Violation]
) -> None:
    if msg is None or msg.role != "tool":
        out.append(
            Violation(row, "tags", "a turn with tool calls is not followed by a tool message")
        )
        return
    lines = [ln for ln in msg.text.split("\n") if ln.startswith("[")]
    if len(lines) != len(calls):
        out.append(
            Violation(row, "tool_response", f"{len(calls)} calls but {len(lines)} result lines")
        )
        return
    for i, (ln, c) in enumerate(zip(lines, calls), start=1):
        if c.start is None or c.end is None:
            continue
        want = T.render_result_line(i, c.start, c.end, "x")[:-1]
        if not ln.startswith(want):
            out.append(
                Violation(row, "tool_response", f"line {i} should start {want!r}: {ln[:40]!r}")
            )


def _check_parts(row: SFTRow | Row, out: list[Violation]) -> None:
    d = row.extra_info.duration
    for m in row.messages:
        if isinstance(m.content, str):
            continue
        for p in m.content:
            if not isinstance(p, VideoPart):
                continue
            length = p.video_end - p.video_start
            if not 0 <= p.video_start < p.video_end <= d + 1e-6 or p.nframes < 1:
                out.append(
                    Violation(
                        row.id,
                        "window",
                        f"video part {p.video_start:g}-{p.video_end:g} s, "
                        f"{p.nframes} frames, outside [0, {d:g}] or empty",
                    )
                )
            elif (
                not (p.video_start == 0 and abs(p.video_end - d) < 1e-6)
                and p.nframes / length > MAX_FPS + 1e-9
            ):
                out.append(
                    Violation(
                        row.id,
                        "budget",
                        f"video part {p.video_start:g}-{p.video_end:g} s samples "
                        f"{p.nframes / length:.2f} fps > {MAX_FPS}",
                    )
                )


def _check_turn(row: Row, i: int, last: bool, k_max: int, seen: set, out: list[Violation]) -> None:
    """Assistant turn ``i`` of a main trace: one think block, then either tool calls (within the
    mode's limit, valid windows, answered by the next tool message) or the final answer."""
    msgs = row.messages
    text = msgs[i].text
    m = _TURN_RE.match(text)
    if m is None:
        out.append(
            Violation(
                row.id,
                "tags",
                f"turn {i} does not start '<think>\\n…\\n</think>\\n': {text[:50]!r}",
            )
        )
        return
    rest = m.group("rest")
    if T.THINK_OPEN in rest or T.THINK_CLOSE in rest:
        out.append(Violation(row.id, "tags", f"turn {i} has a second think block"))
    tools = ("crop_video", "frame_select") if row.mode == "sequential" else ("crop_video",)
    calls = _strict_calls(rest, row.id, out, tools)
    answer = _ANSWER_RE.fullmatch(rest.strip())
    if calls and T.ANSWER_OPEN in rest:
        out.append(Violation(row.id, "tags", f"turn {i} both calls tools and answers"))
    elif calls:
        stripped = _CALL_RE.sub("", rest).strip()
        if stripped:
            out.append(
                Violation(row.id, "tags", f"turn {i} has text outside its calls: {stripped[:40]!r}")
            )
        limit = 1 if row.mode == "sequential" else k_max
        if len(calls) > limit:
            out.append(
                Violation(
                    row.id, "tags", f"turn {i} makes {len(calls)} calls > {limit} ({row.mode})"
                )
            )
        if last:
            out.append(
                Violation(
                    row.id, "tags", "the last assistant turn calls tools instead of answering"
                )
            )
        _check_windows(calls, row.extra_info.duration, row.id, seen, out)
        _check_tool_message(msgs[i + 1] if i + 1 < len(msgs) else None, calls, row.id, out)
    elif answer is None:
        out.append(
            Violation(row.id, "tags", f"turn {i} is neither calls nor one <answer>…</answer>")
        )
    elif not last:
        out.append(Violation(row.id, "tags", f"turn {i} answers but the trace goes on"))
    elif answer.group(1).strip() != row.extra_info.answer.strip():
        out.append(
            Violation(
                row.id,
                "answer",
                f"answer {answer.group(1)!r} != ground truth {row.extra_info.answer!r}",
            )
        )


def check_row(row: Row, *, k_max: int = 8) -> list[Violation]:
    """Every violation of one row (empty = the row passes)."""
    out: list[Violation] = []
    _check_parts(row, out)
    if row.kind != "main":
        return out
    msgs = row.messages
    seen: set = set()
    assistant = [i for i, m in enumerate(msgs) if m.role == "assistant"]
    if not assistant:
        return [*out, Violation(row.id, "tags", "main trace has no assistant message")]
    for i in assistant:
        _check_turn(row, i, i == assistant[-1], k_max, seen, out)
    return out


def check_rows(
    rows: Sequence[Row], *, k_max: int = 8, errors: Sequence[RowError] = ()
) -> CheckReport:
    """Every violation of ``rows``; ``errors`` (the file's error rows, `paravt.data.screen`) count
    as failed rows, each one violation whose rule is its cause."""
    violations: list[Violation] = [Violation(e.id, e.cause, e.detail) for e in errors]
    for r in rows:
        violations.extend(check_row(r, k_max=k_max))
    twice = duplicate_ids([*(r.id for r in rows), *(e.id for e in errors)])
    violations += [
        Violation(i, "duplicate_row", f"id {i} is written {n} times") for i, n in twice.items()
    ]
    return CheckReport(len(rows) + len(errors), tuple(violations), tuple(twice.items()))


def duplicate_ids(ids: Sequence[str]) -> dict[str, int]:
    """Each id written more than once, with its count, in first-seen order."""
    return {i: n for i, n in Counter(ids).items() if n > 1}


def duplicates_line(file: str, report: CheckReport) -> str | None:
    """One line on the ids a file writes more than once (None when it writes each once)."""
    twice = dict(report.duplicates)
    if not twice:
        return None
    shown = ", ".join(f"{i} ×{n}" for i, n in list(twice.items())[:5])
    more = f" and {len(twice) - 5} more" if len(twice) > 5 else ""
    return (
        f"{file}: {len(twice)} ids are written more than once ({sum(twice.values()) - len(twice)} "
        f"extra rows: {shown}{more}); keep one row per id (a step would draw those rows more often "
        "than the rest, and an id names one row in every report)"
    )
