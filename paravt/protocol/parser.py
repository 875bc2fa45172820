"""The ONE tool-call parser, shared by training, eval and rewards (docs/ARCHITECTURE.md §2).

What is recognised
- ``<tool_call>…</tool_call>`` blocks. The body is, in order of preference:
  a JSON object ``{"name": …, "arguments": {…}}`` (``"parameters"`` is accepted for
  ``"arguments"``, and ``arguments`` may itself be a JSON string, OpenAI style); the same object
  with trailing commas; the same object as a Python literal (single quotes, ``True``/``None``);
  a Markdown code fence around any of these is ignored. A body that starts with ``name(`` is a
  python-style call: ``crop_video(80, 150)``, ``crop_video("v.mp4", 80, 150)``,
  ``crop_video(start_time=80, end_time=150)``, also ``crop_video(1:20, 2:30)`` and
  ``print(crop_video(…))``. Positional arguments take the names of the tool's spec, in the
  order of its schema's properties (``ToolSpec.positional``; ``my_tool(3, 9)`` → its first two).
- ``<tool_code>…</tool_code>`` blocks (the pretrained prior's tag): always COUNTED
  (``ParseResult.n_tool_code``, a reversion metric); parsed as calls (``source="tool_code"``) only
  when ``execute_tool_code=True``.
- Python-style calls in free text (e.g. inside ``<think>``) are NOT calls.

Two rule sets decide which of these become calls (``forms``, config ``rollout.call_forms``):

- ``per_call`` (the default here; eval, format statistics): each ``<tool_call>`` block is judged
  alone, as described above and below; a block that cannot be read is a call with an error, so
  the episode shows the model an error line and goes on.
- ``release``: the authors' RL parser (a Hermes-style reader). A ``<tool_call>`` block runs from
  its opening to the next ``</tool_call>`` (protocol tags inside it included) or, when none
  follows, to the end of the turn; ``at_end_of_turn`` says whether the turn ended with its
  end-of-turn token, which the release's decoded text still holds, so that a last block left open
  is read only when the turn was cut (by the token budget). EVERY block must be one strict JSON
  object with ``"name"`` and ``"arguments"``; if one is not, the turn's ``<tool_call>`` blocks
  all yield nothing; a name is kept as written. Only then (no ``<tool_call>``, or a bad one)
  ``<tool_code>`` blocks are read, each line alone as one strict Python call
  (``literals.python_line``): a line Python cannot read (``crop_video(1:20, 2:30)``, a call over
  two lines), even once its stray quotes at the closing parenthesis are dropped, is skipped, and so
  is an argument that is not a literal; keyword
  arguments, when one reads, are the call's arguments (its positional ones are left out),
  otherwise the positional ones take the names of the tool's spec (a window tool's leading video
  path dropped); a line left with no argument is skipped. No call at all: the episode ends. What
  the blocks hold is normalised as below (times, aliases), and a call the JSON names but cannot
  run (an unknown tool, ``"arguments"`` that is not an object) is still a call that fails.

Block boundaries: a block opened by ``<tool_call>`` ends at the next protocol tag. If that tag is
``</tool_call>`` the block is closed; otherwise (another opening, ``<answer>``, end of text…) the
call is unclosed and carries an error. So every opening yields exactly one ``ParsedCall`` (or one
count in ``n_tool_code``): nothing is silently dropped.

Arguments: ``video_path`` is dropped (the video is bound to the episode); ``start``/``end`` are
aliases of ``start_time``/``end_time``; those two are normalised to finite float seconds
(``times.parse_time``); a value that is not a time (NaN, ``Infinity``, ``1e999``, a 400-digit
integer, a word) is the call's error and is removed from ``arguments`` (these readers of a call's
name and arguments are ``paravt.protocol.arguments``). ``validate_calls`` then applies the per-turn
limits.

Bounds (``paravt.protocol.literals``): a block longer than ``MAX_BLOCK_CHARS`` or with brackets
nested deeper than ``MAX_DEPTH`` is the call's error and is not read; warnings of Python's own
readers (``ast``) are captured, never printed. So any string parses in time linear in its length.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from paravt.config import CallForms
from paravt.protocol import tags as T
from paravt.protocol.arguments import (
    call_from_object,
    normalise_args,
    python_call_args,
    release_positional,
)
from paravt.protocol.literals import block_problem, load_object, python_line
from paravt.protocol.prompts import (
    CROP_VIDEO_SPEC,
    FRAME_SELECT_SPEC,
    PYTHON_SPEC,
    positional_params,
)

__all__ = [
    "ParsedCall",
    "ParseResult",
    "parse_calls",
    "CallForms",
    "crop_window",
    "DEFAULT_POSITIONAL",
]

Source = Literal["json", "python", "tool_code"]

#: How positional arguments of a python-style call map to names when the caller names no tools
#: (format statistics, offline repair): the order of the built-in tools' specs, all in ``prompts``.
#: An episode passes ``prompts.positional_params(toolset.specs)``: every tool maps by its own spec.
DEFAULT_POSITIONAL: Mapping[str, tuple[str, ...]] = positional_params(
    (CROP_VIDEO_SPEC, FRAME_SELECT_SPEC, PYTHON_SPEC)
)
_FENCE_RE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```$", re.S)
_NAME_RE = re.compile(r"^[A-Za-z_][\w.]*\s*\(")


@dataclass(frozen=True)
class ParsedCall:
    """One tool call as written by the model (or the error that prevents running it)."""

    index: int  # 0-based position among the calls of this text, in text order
    name: str | None  # tool name; None when the block could not be parsed
    arguments: dict[str, Any]  # normalised (times in float seconds, video_path dropped)
    raw: str  # the whole block as written, tags included
    source: Source  # "json" / "python": inside <tool_call>; "tool_code": an executed <tool_code>
    closed: bool  # the block's closing tag was found
    error: str | None = None  # why this call cannot run (None = it can)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def window(self) -> tuple[float, float] | None:
        """``(start_time, end_time)`` when both are present as numbers (validated calls hold the
        clamped window); None otherwise. Check ``ok`` before running it."""
        return crop_window(self)


@dataclass(frozen=True)
class ParseResult:
    calls: tuple[ParsedCall, ...]  # one per <tool_call> (and per <tool_code> when executed)
    n_tool_code: int  # <tool_code> openings (reversions), executed or not
    n_tool_call: int = 0  # <tool_call> openings
    executed_tool_code: bool = False  # <tool_code> blocks were read as calls (per_call's switch,
    # or the release's fallback when it found them)

    @property
    def valid(self) -> tuple[ParsedCall, ...]:
        return tuple(c for c in self.calls if c.error is None)


def crop_window(call: ParsedCall) -> tuple[float, float] | None:
    """``(start_time, end_time)`` when both are finite numbers; None otherwise (never raises:
    NaN, infinities and integers too large for a float are not a window)."""
    s, e = _finite(call.arguments.get("start_time")), _finite(call.arguments.get("end_time"))
    return None if s is None or e is None else (s, e)


def _finite(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    try:
        f = float(x)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


# ----------------------------------------------------------------------------------- parsing


def parse_calls(
    text: str,
    *,
    forms: CallForms = "per_call",
    execute_tool_code: bool = False,
    positional: Mapping[str, Sequence[str]] | None = None,
    at_end_of_turn: bool = True,
) -> ParseResult:
    """All tool calls of one model output, in text order, under ``forms`` (module doc). Never
    raises on any string. ``positional``: tool name → the parameter names of its positional
    arguments, in order (``prompts.positional_params(specs)``; default ``DEFAULT_POSITIONAL``). A
    python-style call of a tool not in it keeps its positional arguments as ``{"args": [...]}``.
    ``execute_tool_code``: per_call only (the release reads ``<tool_code>`` as its fallback).
    ``at_end_of_turn``: release only, the turn ended with its end-of-turn token (not cut)."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    pos = DEFAULT_POSITIONAL if positional is None else positional
    if forms == "release":
        return _parse_release(text, pos, at_end_of_turn)
    tags = T.find_tags(text)
    calls: list[ParsedCall] = []
    n_code = n_call = 0
    for i, (start, tag) in enumerate(tags):
        if tag not in (T.TOOL_CALL_OPEN, T.TOOL_CODE_OPEN):
            continue
        close = T.TOOL_CALL_CLOSE if tag == T.TOOL_CALL_OPEN else T.TOOL_CODE_CLOSE
        nxt_pos, nxt_tag = tags[i + 1] if i + 1 < len(tags) else (len(text), "")
        closed = nxt_tag == close
        body = text[start + len(tag) : nxt_pos]
        raw = text[start : nxt_pos + (len(close) if closed else 0)]
        if tag == T.TOOL_CODE_OPEN:
            n_code += 1
            if not execute_tool_code:
                continue
            source: Source = "tool_code"
        else:
            n_call += 1
            source = "json"
        calls.append(_make_call(len(calls), body, raw, source, closed, tag, pos))
    return ParseResult(tuple(calls), n_code, n_call, execute_tool_code)


# ------------------------------------------------------------------------- the release's rules


def _parse_release(
    text: str, pos: Mapping[str, Sequence[str]], at_end_of_turn: bool
) -> ParseResult:
    """``forms="release"`` (module doc): every ``<tool_call>`` block a strict JSON call, or the
    ``<tool_code>`` lines, or nothing."""
    found = T.find_tags(text)
    n_call = sum(1 for _, t in found if t == T.TOOL_CALL_OPEN)
    n_code = sum(1 for _, t in found if t == T.TOOL_CODE_OPEN)
    blocks = _release_blocks(text, T.TOOL_CALL_OPEN, T.TOOL_CALL_CLOSE, at_end_of_turn)
    calls = _release_json_calls(blocks)
    if calls:
        return ParseResult(calls, n_code, n_call)
    code = _release_blocks(text, T.TOOL_CODE_OPEN, T.TOOL_CODE_CLOSE, at_end_of_turn)
    calls = _release_code_calls(code, pos)
    return ParseResult(calls, n_code, n_call, executed_tool_code=bool(calls))


def _release_blocks(
    text: str, open_tag: str, close_tag: str, at_end_of_turn: bool
) -> list[tuple[str, str, bool]]:
    """``(body, raw, closed)`` of each block as the release's pattern cuts them: from an opening
    to the first closing tag after it (whatever lies between), else to the end of the turn. The
    release decodes a turn with its end-of-turn token, so an open block of a turn that ended there
    holds that token (``<|im_end|>``), which no JSON reader accepts."""
    out: list[tuple[str, str, bool]] = []
    at = text.find(open_tag)
    while at >= 0:
        start = at + len(open_tag)
        end = text.find(close_tag, start)
        if end < 0:
            body = text[start:] + (T.IM_END if at_end_of_turn else "")
            out.append((body, text[at:], False))
            break
        out.append((text[start:end], text[at : end + len(close_tag)], True))
        at = text.find(open_tag, end + len(close_tag))
    return out


def _release_json_calls(blocks: Sequence[tuple[str, str, bool]]) -> tuple[ParsedCall, ...]:
    """One call per block when every block is a strict JSON object with ``name`` and
    ``arguments``; otherwise none (one bad block drops the turn's blocks)."""
    objects: list[dict[str, Any]] = []
    for body, _, _ in blocks:
        if block_problem(body) is not None:
            return ()
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError):
            return ()
        if not isinstance(obj, dict) or "name" not in obj or "arguments" not in obj:
            return ()
        objects.append(obj)
    calls: list[ParsedCall] = []
    for i, (obj, (_, raw, closed)) in enumerate(zip(objects, blocks, strict=True)):
        name, args, error = call_from_object(obj)
        if name is not None:
            name = obj["name"]  # as written: the release looks " crop_video" up as it is
        if error is None and not isinstance(obj["arguments"], dict):
            error = f'"arguments" must be an object, got {type(obj["arguments"]).__name__}'
            args = {}
        if name is not None:
            args, arg_error = normalise_args(args)
            error = error or arg_error
        calls.append(ParsedCall(i, name, args, raw, "json", closed, error))
    return tuple(calls)


def _release_code_calls(
    blocks: Sequence[tuple[str, str, bool]], pos: Mapping[str, Sequence[str]]
) -> tuple[ParsedCall, ...]:
    """Each line of each ``<tool_code>`` block that is one strict Python call with at least one
    argument that reads (``literals.python_line``); other lines are skipped. Keyword arguments,
    when one reads, are the call's arguments and its positional ones are left out (the release's
    ``tool_parser.py:95-104``); otherwise the positional ones take the names of the tool's spec
    (``arguments.release_positional``)."""
    calls: list[ParsedCall] = []
    for body, raw, closed in blocks:
        for line in body.split("\n"):
            s = line.strip()
            if not s or block_problem(s) is not None:
                continue
            read = python_line(s)
            if read is None:
                continue
            name, positional, keywords = read
            args = dict(keywords) if keywords else release_positional(name, positional, pos)
            if not args:
                continue
            args, error = normalise_args(args)
            calls.append(ParsedCall(len(calls), name, args, raw, "tool_code", closed, error))
    return tuple(calls)


def _make_call(
    index: int,
    body: str,
    raw: str,
    source: Source,
    closed: bool,
    tag: str,
    pos: Mapping[str, Sequence[str]],
) -> ParsedCall:
    name, args, style, error = _parse_body(body, pos)
    if source != "tool_code":
        source = style
    if name is not None:
        args, arg_error = normalise_args(args)
        error = error or arg_error
    if not closed:
        unclosed = f"unclosed {tag}: the block has no closing tag before the next tag or the end"
        error = unclosed if error is None else f"{unclosed}; {error}"
    return ParsedCall(index, name, args, raw, source, closed, error)


def _parse_body(
    body: str, pos: Mapping[str, Sequence[str]]
) -> tuple[str | None, dict[str, Any], Literal["json", "python"], str | None]:
    s = body.strip()
    problem = block_problem(s)
    if problem is not None:
        return None, {}, "json", f"not read: {problem}"
    fence = _FENCE_RE.match(s)
    if fence:
        s = fence.group(1).strip()
    if not s:
        return None, {}, "json", "empty call block"
    if _NAME_RE.match(s):
        name, args, error = python_call_args(s, pos)
        return name, args, "python", error
    obj, error = load_object(s)
    if error is not None:
        return None, {}, "json", error
    name, args, error = call_from_object(obj)
    return name, args, "json", error
