"""The protocol's tags and the canonical text forms of tool calls and tool responses
(docs/ARCHITECTURE.md §2).

Everything that WRITES protocol text (prompts, the oracle that writes SFT traces, the episode's
tool-response turn) uses these functions, so that what the parser reads is what we write.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"
TOOL_RESPONSE_OPEN, TOOL_RESPONSE_CLOSE = "<tool_response>", "</tool_response>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
TOOL_CODE_OPEN, TOOL_CODE_CLOSE = "<tool_code>", "</tool_code>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"

#: Forced at the start of every main-agent response (Exploration Anchoring,
#: docs/ARCHITECTURE.md §2).
THINK_PREFIX = THINK_OPEN + "\n"

PROTOCOL_TAGS: tuple[str, ...] = (
    THINK_OPEN,
    THINK_CLOSE,
    TOOL_CALL_OPEN,
    TOOL_CALL_CLOSE,
    TOOL_RESPONSE_OPEN,
    TOOL_RESPONSE_CLOSE,
    ANSWER_OPEN,
    ANSWER_CLOSE,
    TOOL_CODE_OPEN,
    TOOL_CODE_CLOSE,
)


def with_prefix(prefix: str, completion: str) -> str:
    """``prefix + completion`` for text whose prompt may or may not have held the forced prefix
    (offline scoring, verl's decoded response): never doubled, so a completion that already
    opens with the prefix's tag (e.g. a rollout printed with its ``<think>``) is kept as written."""
    head = prefix.strip()
    if not head or completion.lstrip().startswith(head):
        return completion
    return prefix + completion


def fmt_time(seconds: float) -> str:
    """``MM:SS`` (or ``H:MM:SS`` past an hour), rounded to the second. Total: a value that is not
    a finite number (NaN, an infinity, an int too large for a float) is written ``--:--`` so that
    an error line about a malformed call can always be rendered."""
    try:
        value = float(seconds)
    except (OverflowError, TypeError, ValueError):
        return "--:--"
    if not math.isfinite(value):
        return "--:--"
    s = max(0, int(round(value)))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


def render_tool_call(name: str, arguments: Mapping[str, Any]) -> str:
    """One canonical call block: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``."""
    body = json.dumps({"name": name, "arguments": dict(arguments)}, ensure_ascii=False)
    return f"{TOOL_CALL_OPEN}\n{body}\n{TOOL_CALL_CLOSE}"


def render_crop_call(start_time: float, end_time: float) -> str:
    return render_tool_call(
        "crop_video", {"start_time": _num(start_time), "end_time": _num(end_time)}
    )


def render_result_line(index: int, start: float | None, end: float | None, text: str) -> str:
    """``[i] MM:SS–MM:SS: text`` (window omitted for calls that have none, e.g. python)."""
    window = f" {fmt_time(start)}–{fmt_time(end)}" if start is not None and end is not None else ""
    return f"[{index}]{window}: {text.strip()}"


MEDIA_MARKERS = ("<video>", "<image>")
#: Invisible character that splits a marker or control-token text so that nothing parses it.
WORD_JOINER = "\u2060"


def defuse_media_markers(text: str) -> str:
    """Observation text (tool output, an error quoting the model) with its ``<video>`` /
    ``<image>`` written with a word joiner after ``<``: only the marker the episode appends for real
    frames
    is a placeholder, so a tool cannot claim media that do not exist."""
    for marker in MEDIA_MARKERS:
        text = text.replace(marker, "<" + WORD_JOINER + marker[1:])
    return text


def with_media_marker(text: str) -> str:
    """Body of a result line whose frames are shown inline: the observation text, then ONE
    ``<video>`` marker (the episode and the oracle's sequential traces both write it this way)."""
    return f"{text} <video>" if text else "<video>"


def render_tool_response_body(lines: Sequence[str]) -> str:
    """The content of the ONE tool-response turn holding all K results, in call order. The chat
    template wraps a ``tool`` message in ``<tool_response>``…``</tool_response>``."""
    return "\n".join(lines)


def render_answer(think: str, answer: str, *, with_open_think: bool = True) -> str:
    """A final main-agent response. With ``with_open_think=False`` the leading ``<think>\\n`` is
    omitted because it is the forced prefix (it is prompt, not completion)."""
    head = THINK_PREFIX if with_open_think else ""
    return f"{head}{think.strip()}\n{THINK_CLOSE}\n{ANSWER_OPEN}{answer}{ANSWER_CLOSE}"


def render_tool_turn(think: str, calls: Sequence[str], *, with_open_think: bool = True) -> str:
    head = THINK_PREFIX if with_open_think else ""
    return f"{head}{think.strip()}\n{THINK_CLOSE}\n" + "\n".join(calls)


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(float(x), 2)


# --- reading helpers (added by the protocol/parser owner) -------------------------------------

ALL_TAGS: tuple[str, ...] = (*PROTOCOL_TAGS, IM_START, IM_END)
TAG_RE = re.compile("|".join(re.escape(t) for t in ALL_TAGS))
#: An observation block ends at its ``</tool_response>`` or, unclosed, at the end of its TURN (the
#: next ``<|im_end|>``) or of the text: a block never runs into the next turn.
_OBSERVATION_RE = re.compile(
    re.escape(TOOL_RESPONSE_OPEN)
    + r".*?(?:"
    + re.escape(TOOL_RESPONSE_CLOSE)
    + r"|(?="
    + re.escape(IM_END)
    + r")|\Z)",
    re.S,
)

#: Between two turns of a joined completion (``join_turns``): the chat template's end-of-turn.
TURN_SEPARATOR = IM_END + "\n"


def join_turns(turns: Sequence[str]) -> str:
    """The text rewards read for a multi-turn rollout: each turn's text (forced prefix + response)
    ending with ``<|im_end|>`` as it does in the token stream, so that a block a turn leaves open
    (an unclosed ``<tool_response>``, ``<answer>``, ``<tool_call>``) ends with that turn and can
    never swallow or hide another turn's text."""
    return TURN_SEPARATOR.join(turns)


def strip_observations(text: str) -> str:
    """``text`` with the CONTENT of every ``<tool_response>`` block removed (the tags stay; an
    unclosed block runs to the end of its turn, see ``join_turns``). Observations are not the
    model's output: a sub-agent summary that quotes ``<answer>`` must not count as the main
    agent's answer or format."""
    return _OBSERVATION_RE.sub(
        lambda m: (
            TOOL_RESPONSE_OPEN
            + (TOOL_RESPONSE_CLOSE if m.group().endswith(TOOL_RESPONSE_CLOSE) else "")
        ),
        text,
    )


#: ``<`` that starts a chat control token (``<|im_start|>``, ``<|eot_id|>``, …) or a protocol tag.
_CONTROL_START_RE = re.compile(r"<(?=\||" + "|".join(re.escape(t[1:]) for t in PROTOCOL_TAGS) + ")")


def defuse_control_text(text: str) -> str:
    """Untrusted text (tool output, a model's prediction) for a CHAT API whose server tokenizes it
    (an OpenAI-compatible backend, the LLM judge): a word joiner (U+2060, invisible) after every
    ``<`` that starts a control token or protocol tag, so the server's tokenizer cannot read it as
    one. Token-level encoding does not need this: ``ChatCodec`` encodes such text as plain
    tokens."""
    return _CONTROL_START_RE.sub("<" + WORD_JOINER, text)


def defuse_observation(text: str) -> str:
    """THE rule for tool-observation text (a result, an error quoting the model) entering the
    context: media markers and control-token / protocol-tag starts defused. Applied once, where the
    episode renders the tool turn, so the hf codec and an OpenAI-compatible server see the same text
    (and tokens); idempotent, so a backend may apply ``defuse_control_text`` again."""
    return defuse_control_text(defuse_media_markers(text))


def find_tags(text: str) -> list[tuple[int, str]]:
    """``(position, tag)`` of every protocol tag and chat marker, in order."""
    return [(m.start(), m.group()) for m in TAG_RE.finditer(text)]
