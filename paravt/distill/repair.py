"""Deterministic repair of one teacher turn into the protocol's canonical text (ParaVT §B:
"re-emit every tool call as strict JSON").

Calls are READ by the one parser (`paravt.protocol.parser.parse_calls`, which already tolerates
single quotes, trailing commas, python-call style, code fences and ``<tool_code>``) and WRITTEN by
`paravt.protocol.tags` (`render_tool_call`, `render_tool_turn`, `render_answer`). What this module
adds is the part the parser deliberately does not do (free text is not a call at rollout), and the
bookkeeping of what was changed. Each change has a name (``RepairedTurn.changes``):

- ``prose``: text outside ``<think>``/``<tool_call>``/``<answer>`` (dropped; without a think
  block, prose BEFORE the first call or answer becomes the think: ``prose_think``);
- ``untagged_call``: a line that is a bare JSON call object or a ``tool(…)`` call of a known tool,
  outside any tag, in a turn with neither calls nor an answer → wrapped in ``<tool_call>``;
- ``tool_code``: a call written in ``<tool_code>`` (the pretrained tag);
- ``single_quotes`` / ``trailing_comma`` / ``python_call`` / ``fence``: the call body's noise;
- ``args``: argument names or values normalised (``start``→``start_time``, ``"01:20"``→80, a
  ``video_path`` dropped, ``"parameters"`` for ``"arguments"``);
- ``unclosed_call`` / ``unclosed_think`` / ``unclosed_answer``: a missing closing tag;
- ``no_think``: no think text at all → a fixed placeholder think;
- ``think_angle``: ``<`` in the think (the data check forbids it) → ``‹``;
- ``answer_untagged``: no ``<answer>`` and no call: the last non-empty line is the answer;
- ``answer_with_calls``: a turn that calls AND answers keeps only its calls (the answer could not
  have seen the results).

A call whose body cannot be read, names an unknown tool or has an unreadable argument makes the
turn unrepairable (``error``); the caller may then ask an LLM to clean it up (`cleanup_prompt`)
and repair its reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from paravt.protocol import tags as T
from paravt.protocol.parser import parse_calls

PLACEHOLDER_THINK = "I will look at the video to answer the question."
_THINK_RE = re.compile(
    re.escape(T.THINK_OPEN) + r"(.*?)(?:" + re.escape(T.THINK_CLOSE) + r"|(?=<[a-z_]+>)|\Z)", re.S
)
_ANSWER_RE = re.compile(
    re.escape(T.ANSWER_OPEN) + r"(.*?)(" + re.escape(T.ANSWER_CLOSE) + r"|\Z)", re.S
)
_BLOCK_RE = re.compile(r"<(tool_call|tool_code)>.*?(?:</\1>|(?=<[a-z_/]+>)|\Z)", re.S)
_FENCE_RE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```$", re.S)
_TRAILING_RE = re.compile(r",(\s*[}\]])")
_ANY_TAG_RE = re.compile(r"</?(?:think|tool_call|tool_code|answer|tool_response)>")


@dataclass(frozen=True)
class CanonicalCall:
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class RepairedTurn:
    think: str
    calls: tuple[CanonicalCall, ...] = ()
    answer: str | None = None
    changes: tuple[str, ...] = ()
    error: str | None = None  # unrepairable: why

    def render(self) -> str:
        """The canonical assistant text (with its leading ``<think>\\n``, as rows store it)."""
        if self.calls:
            return T.render_tool_turn(
                self.think, [T.render_tool_call(c.name, c.arguments) for c in self.calls]
            )
        return T.render_answer(self.think, self.answer or "")


def canonical_args(name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments as training data writes them: times as int-or-2-decimals, ``nframes`` an int."""
    out = {k: v for k, v in args.items()}
    for key in ("start_time", "end_time", "resize"):
        if isinstance(out.get(key), (int, float)) and not isinstance(out.get(key), bool):
            x = float(out[key])
            out[key] = int(x) if x.is_integer() and key != "resize" else round(x, 2)
    if isinstance(out.get("nframes"), (int, float)) and not isinstance(out.get("nframes"), bool):
        out["nframes"] = int(out["nframes"])
    return out


def repair_turn(text: str, tools: frozenset[str] | set[str]) -> RepairedTurn:
    """The canonical form of one teacher turn (see the module docstring)."""
    changes: list[str] = []
    text = text or ""
    think, text_wo_think = _think(text, changes)
    if not _BLOCK_RE.search(text_wo_think) and T.ANSWER_OPEN not in text_wo_think:
        text_wo_think = _wrap_untagged(text_wo_think, tools, changes)
    answer_m = _ANSWER_RE.search(text_wo_think)
    outside = _ANSWER_RE.sub(" ", _BLOCK_RE.sub(" ", text_wo_think))
    prose = _ANY_TAG_RE.sub(" ", outside).strip()
    calls, error = _calls(text_wo_think, tools, changes)
    if error is not None:
        return RepairedTurn(think or "", changes=tuple(changes), error=error)
    if prose:
        if not think and not calls and answer_m is None:
            pass  # the prose is the answer (below)
        elif not think:
            first = min(
                [m.start() for m in (_BLOCK_RE.search(text_wo_think), answer_m) if m is not None]
            )
            think = _ANY_TAG_RE.sub(" ", text_wo_think[:first]).strip()
            changes.append("prose_think" if think else "prose")
        else:
            changes.append("prose")
    answer = None
    if calls:
        if answer_m is not None:
            changes.append("answer_with_calls")
    elif answer_m is not None:
        answer = answer_m.group(1).strip()
        if not answer_m.group(2):
            changes.append("unclosed_answer")
    else:
        lines = [ln.strip() for ln in _ANY_TAG_RE.sub("\n", outside).splitlines() if ln.strip()]
        answer = lines[-1] if lines else ""
        changes.append("answer_untagged")
    return RepairedTurn(
        _clean_think(think, changes), tuple(calls), answer, tuple(dict.fromkeys(changes))
    )


def _think(text: str, changes: list[str]) -> tuple[str, str]:
    m = _THINK_RE.search(text)
    if m is None:
        return "", text
    if not text[m.end() - len(T.THINK_CLOSE) : m.end()] == T.THINK_CLOSE:
        changes.append("unclosed_think")
    return m.group(1).strip(), text[: m.start()] + " " + text[m.end() :]


def _clean_think(think: str, changes: list[str]) -> str:
    think = think.strip()
    if not think:
        changes.append("no_think")
        return PLACEHOLDER_THINK
    if "<" in think:
        changes.append("think_angle")
        think = think.replace("<", "‹")
    return think


def _wrap_untagged(text: str, tools: frozenset[str] | set[str], changes: list[str]) -> str:
    names = "|".join(re.escape(t) for t in sorted(tools))
    line_re = re.compile(
        r"^\s*(?:`{1,3})?\s*(\{.*\"name\".*\}|(?:print\s*\(\s*)?(?:" + names + r")\s*\(.*\)\s*\)?)"
        r"\s*(?:`{1,3})?\s*$",
        re.M,
    )
    if not names or not line_re.search(text):
        return text
    changes.append("untagged_call")
    return line_re.sub(lambda m: f"{T.TOOL_CALL_OPEN}{m.group(1)}{T.TOOL_CALL_CLOSE}", text)


def _calls(
    text: str, tools: frozenset[str] | set[str], changes: list[str]
) -> tuple[list[CanonicalCall], str | None]:
    calls: list[CanonicalCall] = []
    for c in parse_calls(text, execute_tool_code=True).calls:
        unclosed = not c.closed
        error = c.error
        if unclosed and error is not None and error.startswith("unclosed"):
            error = error.split("; ", 1)[1] if "; " in error else None
        if error is not None or c.name is None:
            return [], f"unreadable call {c.raw[:80]!r}: {error}"
        if c.name not in tools:
            return [], f"unknown tool {c.name!r} (known: {', '.join(sorted(tools))})"
        if unclosed:
            changes.append("unclosed_call")
        if c.source == "tool_code":
            changes.append("tool_code")
        _body_noise(c.raw, c.source, c.arguments, changes)
        calls.append(CanonicalCall(c.name, canonical_args(c.name, c.arguments)))
    return calls, None


def _body_noise(raw: str, source: str, args: Mapping[str, Any], changes: list[str]) -> None:
    body = _ANY_TAG_RE.sub("", raw).strip()
    fence = _FENCE_RE.match(body)
    if fence:
        changes.append("fence")
        body = fence.group(1).strip()
    if source == "python" or re.match(r"^[A-Za-z_][\w.]*\s*\(", body):
        changes.append("python_call")
        return
    try:
        obj = json.loads(body)
    except ValueError:
        try:
            obj = json.loads(_TRAILING_RE.sub(r"\1", body))
            changes.append("trailing_comma")
        except ValueError:
            changes.append("single_quotes")
            return
    raw_args = obj.get("arguments", obj.get("parameters")) if isinstance(obj, dict) else None
    if not isinstance(raw_args, dict) or "arguments" not in obj or dict(raw_args) != dict(args):
        changes.append("args")
