"""Bounded reading of what a model writes inside one tool-call block (docs/ARCHITECTURE.md §2):
JSON objects, Python literals and python-style calls, for ``paravt.protocol.parser``.

Model text is hostile input, so every reader here is bounded before Python's own readers see it:

- **size**: a block longer than ``MAX_BLOCK_CHARS`` is not read (``block_problem``);
- **depth**: brackets ``( [ {`` nested deeper than ``MAX_DEPTH`` are not read (``json.loads`` and
  ``ast`` recurse once per level: ``crop_video([[[…]]], 5)`` 990 deep used to raise
  RecursionError out of ``parse_calls``);
- **time**: both bounds make every read linear in at most ``MAX_BLOCK_CHARS`` characters;
- **warnings**: ``ast`` warns on model text (``crop_video(10in, 20)`` → "SyntaxWarning: invalid
  decimal literal" printed on the user's terminal); its warnings are captured and dropped.

Each reader returns None (or an error text) for what it cannot read; none raises on any string.
"""

from __future__ import annotations

import ast
import json
import re
import threading
import warnings
from typing import Any

__all__ = [
    "MAX_BLOCK_CHARS",
    "MAX_DEPTH",
    "block_problem",
    "load_object",
    "python_call",
    "python_line",
]

#: A tool-call block longer than this many characters is an error, never parsed (a real call,
#: even a python tool's code, is a few hundred).
MAX_BLOCK_CHARS = 65536
#: Brackets nested deeper than this in one block make it an error, never parsed.
MAX_DEPTH = 64

PyCall = tuple[str, list[Any], list[tuple[str, Any]]]
#: ``python_line``: the name, each positional argument as ``(read, value)`` in its place, and the
#: keyword arguments whose value reads.
PyLine = tuple[str, list[tuple[bool, Any]], list[tuple[str, Any]]]

_TRAILING_COMMA_RE = re.compile(r",(\s*[}\]])")
_CALL_RE = re.compile(r"^(?:print\s*\(\s*)?([A-Za-z_][\w.]*)\s*\((.*?)\)\s*\)?$", re.S)
_OPEN, _CLOSE = "([{", ")]}"
#: What Python's readers raise on hostile text that is not a plain parse failure.
_READ_ERRORS = (ValueError, TypeError, SyntaxError, RecursionError, MemoryError, OverflowError)
# ``warnings.catch_warnings`` swaps process-wide state: one reader at a time keeps the filters of
# concurrent episodes (threads) from being restored in the wrong order.
_WARN_LOCK = threading.Lock()


def block_problem(s: str) -> str | None:
    """Why ``s`` is not read at all (too long, nested too deep), or None."""
    if len(s) > MAX_BLOCK_CHARS:
        return f"the block has {len(s)} characters, more than the {MAX_BLOCK_CHARS} a call may have"
    depth = deepest = 0
    for ch in s:
        if ch in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    return f"brackets nested more than {MAX_DEPTH} deep"
        elif ch in _CLOSE and depth:
            depth -= 1
    return None


def load_object(s: str) -> tuple[Any, str | None]:
    """JSON, then JSON without trailing commas, then a Python literal; ``(value, None)`` or
    ``(None, why)``. Call ``block_problem`` first: the depth bound is what keeps this finite."""
    try:
        return json.loads(s), None
    except _READ_ERRORS as err:
        first = f"not valid JSON ({err})"
    try:
        return json.loads(_TRAILING_COMMA_RE.sub(r"\1", s)), None
    except _READ_ERRORS:
        pass
    try:
        with _WARN_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.literal_eval(s), None
    except _READ_ERRORS:
        return None, first


def python_call(s: str) -> PyCall | None:
    """``name(args…)`` read as ``(name, positional, keywords)``: through ``ast`` (values must be
    literals), else by splitting the argument list (``crop_video(1:20, 2:30)``: values stay strings
    for the time parser); None when ``s`` is not a call."""
    try:
        with _WARN_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = _python_call_ast(s)
    except _READ_ERRORS:
        parsed = None
    return parsed or _python_call_split(s)


def python_line(s: str) -> PyLine | None:
    """One ``<tool_code>`` line read as the authors' RL parser reads it (the release's
    ``paravt/rl/utils/tool_parser.py:50-104``): strict Python only (``crop_video(1:20, 2:30)`` is
    not a call), ``print(call(…))`` unwrapped, the name of a plain or dotted callee; each argument
    that is not a literal (a variable, an expression) is left out, the others kept. None when the
    line is not one call. A line that does not parse gets the release's one repair of a stray
    quote (its ``:53-65``): a quote left after the call's closing parenthesis, or just before it
    (``end_time=20')``), is dropped and the line read again."""
    try:
        with _WARN_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            node = _parse_repaired(s)
            if node is None:
                return None
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "print"
                and node.args
                and isinstance(node.args[0], ast.Call)
            ):
                node = node.args[0]
            if not isinstance(node, ast.Call):
                return None
            func = node.func
            if isinstance(func, ast.Name):
                name = func.id
            elif isinstance(func, ast.Attribute):
                name = func.attr
            else:
                return None
            positional = [_literal(a) for a in node.args]
            keywords = [
                (k.arg, value)
                for k in node.keywords
                if k.arg is not None
                for read, value in [_literal(k.value)]
                if read
            ]
    except _READ_ERRORS:
        return None
    return name, positional, keywords


_QUOTE_AFTER_CALL = re.compile(r"\)\s*['\"].*$")  # func(...)') → func(...)
_QUOTE_BEFORE_CLOSE = re.compile(r"['\"](\s*\))")  # end_time=20') → end_time=20)


def _parse_repaired(s: str) -> ast.expr | None:
    """``s`` parsed as one expression; on a syntax error, once more with its stray quotes dropped
    (``python_line``); None when neither parses."""
    try:
        return ast.parse(s, mode="eval").body
    except SyntaxError:
        fixed = _QUOTE_BEFORE_CLOSE.sub(r"\1", _QUOTE_AFTER_CALL.sub(")", s))
        if fixed == s:
            return None
        try:
            return ast.parse(fixed, mode="eval").body
        except SyntaxError:
            return None


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return False, None


def _python_call_ast(s: str) -> PyCall | None:
    tree = ast.parse(s, mode="eval")
    node = tree.body
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Call)
        and not node.keywords
    ):
        node = node.args[0]
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    name = (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else None
    )
    if name is None or any(k.arg is None for k in node.keywords):
        return None
    positional = [ast.literal_eval(a) for a in node.args]
    keywords = [(str(k.arg), ast.literal_eval(k.value)) for k in node.keywords]
    return name, positional, keywords


def _python_call_split(s: str) -> PyCall | None:
    """Fallback for calls that are not Python, e.g. ``crop_video(1:20, 2:30)``: split the
    argument list on commas outside quotes; values stay strings (times parse later)."""
    m = _CALL_RE.match(s)
    if m is None:
        return None
    name = m.group(1).rsplit(".", 1)[-1]
    positional: list[Any] = []
    keywords: list[tuple[str, Any]] = []
    for part in _split_args(m.group(2)):
        key, eq, value = part.partition("=")
        if eq and re.fullmatch(r"\s*[A-Za-z_]\w*\s*", key):
            keywords.append((key.strip(), _scalar(value)))
        elif keywords:
            return None  # positional after keyword
        else:
            positional.append(_scalar(part))
    return name, positional, keywords


def _split_args(arglist: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    quote = ""
    for ch in arglist:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == ",":
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    parts = [p.strip() for p in parts]
    return [] if parts == [""] else parts


def _scalar(token: str) -> Any:
    t = token.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        return t[1:-1]
    try:
        return json.loads(t)
    except _READ_ERRORS:
        return t
