"""A tool call's name and arguments, as the parser reads them under both rule sets
(``paravt.protocol.parser``; its module doc says which forms each set reads).

- ``call_from_object``: the name and arguments of a JSON call object (``"parameters"`` accepted
  for ``"arguments"``, which may itself be a JSON string).
- ``python_call_args`` (``per_call``) and ``release_positional`` (``release``): a python-style
  call's positional arguments take the names of the tool's spec; a window tool's leading video
  path is dropped.
- ``normalise_args``: ``video_path`` dropped, ``start``/``end`` read as ``start_time``/
  ``end_time``, and those two as finite float seconds (``times.parse_time``); a value that is not
  a time is the call's error and is removed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from paravt.errors import ToolCallError
from paravt.protocol.literals import block_problem, load_object, python_call
from paravt.protocol.times import parse_time

__all__ = [
    "TIME_KEYS",
    "WINDOW_TOOLS",
    "call_from_object",
    "is_path_like",
    "normalise_args",
    "python_call_args",
    "release_positional",
]

#: Tools whose calls carry a ``[start_time, end_time]`` window (validated and clamped).
WINDOW_TOOLS: frozenset[str] = frozenset({"crop_video"})
TIME_KEYS = ("start_time", "end_time")
_ALIASES = {"start": "start_time", "end": "end_time"}
_IGNORED_ARGS = ("video_path",)


def call_from_object(obj: Any) -> tuple[str | None, dict[str, Any], str | None]:
    """``(name, arguments, error)`` of one JSON call object; the name is stripped."""
    if not isinstance(obj, dict):
        return None, {}, f"expected one JSON object per block, got {type(obj).__name__}"
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return None, {}, 'the call has no "name" string'
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        loaded, err = _load_arguments(args)
        if err is not None:
            return name.strip(), {}, f'"arguments" is a string that is {err}'
        args = loaded
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return name.strip(), {}, f'"arguments" must be an object, got {type(args).__name__}'
    return name.strip(), {str(k): v for k, v in args.items()}, None


def _load_arguments(text: str) -> tuple[Any, str | None]:
    """An ``"arguments"`` string (OpenAI style), read under the same bounds as a block."""
    if not text.strip():
        return {}, None
    problem = block_problem(text)
    return (None, f"not read: {problem}") if problem else load_object(text)


def python_call_args(
    s: str, pos: Mapping[str, Sequence[str]]
) -> tuple[str | None, dict[str, Any], str | None]:
    """``(name, arguments, error)`` of a python-style call under ``per_call``: positional
    arguments named by ``pos`` (more of them than names is the call's error), else kept as
    ``{"args": [...]}``; a keyword given twice is the call's error."""
    parsed = python_call(s)
    if parsed is None:
        return None, {}, f"not a call: {s[:60]!r}"
    name, positional, keywords = parsed
    if name == "print" and not positional and not keywords:
        return None, {}, "empty print()"
    names = list(pos.get(name, ()))
    if name in WINDOW_TOOLS and positional and is_path_like(positional[0]):
        positional = positional[1:]  # crop_video("v.mp4", 80, 150): the path is ignored
    args: dict[str, Any] = {}
    if names:
        if len(positional) > len(names):
            return (
                name,
                {},
                f"{name} takes at most {len(names)} positional arguments "
                f"({', '.join(names)}), got {len(positional)}",
            )
        args.update(zip(names, positional))
    elif positional:
        args["args"] = list(positional)
    for key, value in keywords:
        if key in args:
            return name, {}, f"argument {key!r} given twice"
        args[key] = value
    return name, args, None


def release_positional(
    name: str, positional: Sequence[tuple[bool, Any]], pos: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """Positional arguments named by the tool's spec, in order (ours: the release names them
    ``video_path, start_time, end_time``). A window tool's first argument is dropped when it is a
    video path: a string that is not a time, or a name (``crop_video(video, 80, 150)``). An
    argument that does not read, or one past the spec's names, is left out."""
    if name in WINDOW_TOOLS and positional:
        read, first = positional[0]
        if not read or is_path_like(first):
            positional = positional[1:]
    names = pos.get(name, ())
    return {k: v for k, (read, v) in zip(names, positional) if read}


def is_path_like(value: Any) -> bool:
    """A string that is not a time (so, for a window tool's first argument, a video path)."""
    if not isinstance(value, str):
        return False
    try:
        parse_time(value)
    except ToolCallError:
        return True
    return False


def normalise_args(args: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The arguments as a tool reads them, and the first time that did not read (or None)."""
    out = {k: v for k, v in args.items() if k not in _IGNORED_ARGS}
    for alias, canon in _ALIASES.items():
        if alias in out and canon not in out:
            out[canon] = out.pop(alias)
    error = None
    for key in TIME_KEYS:
        if key in out:
            try:
                out[key] = parse_time(out[key])
            except ToolCallError as err:
                del out[key]  # the error reports it; an invalid value never reaches a window
                error = error or f"{key}: {err}"
    return out, error
