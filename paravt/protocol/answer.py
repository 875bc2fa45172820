"""Answer extraction and the degenerate-output test (docs/ARCHITECTURE.md §2).

``extract_answer`` follows the paper's three levels, taking the LAST block because an answer
written after tool results supersedes an earlier guess:

1. if the text has an ``<answer>`` tag: the content of the LAST ``<answer>`` block, up to its
   ``</answer>`` or, when unclosed, up to the next protocol tag or the end. An empty block gives
   None (no answer) and does not fall through: the model chose to answer, with nothing;
2. else, if the text has a ``</think>``: the text after the last ``</think>``, with tool blocks
   (``<tool_call>``, ``<tool_code>``, ``<tool_response>``) and remaining tags removed, when that
   is non-empty;
3. else the last non-empty line of the text (tool blocks and tags removed), or None.

Observations (``<tool_response>`` contents) are never read: they are not the model's output.
"""

from __future__ import annotations

import re

from paravt.protocol import tags as T

#: [paper] docs/ARCHITECTURE.md §2: this many ``<|im_start|>`` …
DEGENERATE_COUNT = 5
#: … within a span shorter than this many characters make an output degenerate.
DEGENERATE_SPAN = 300

_TOOL_OPENS = {
    T.TOOL_CALL_OPEN: T.TOOL_CALL_CLOSE,
    T.TOOL_CODE_OPEN: T.TOOL_CODE_CLOSE,
    T.TOOL_RESPONSE_OPEN: T.TOOL_RESPONSE_CLOSE,
}


def extract_answer(text: str) -> str | None:
    """The model's final answer (stripped), or None when there is none. Never raises."""
    return _extract(text)[0]


def answer_level(text: str) -> int:
    """Which level of ``extract_answer`` found the answer: 1 (an ``<answer>`` block), 2 (after
    ``</think>``), 3 (the last line of text that never closed its think and wrote no answer), 0
    (none). Levels 1 and 2 are answers the model FINISHED; 3 is what is left of a broken output.
    Never raises."""
    return _extract(text)[1]


def extract_with_level(text: str) -> tuple[str | None, int]:
    """``(extract_answer(text), answer_level(text))`` from one pass over the text."""
    return _extract(text)


def _extract(text: str) -> tuple[str | None, int]:
    if not isinstance(text, str):
        return None, 0
    text = T.strip_observations(text)
    tags = T.find_tags(text)
    answer_opens = [i for i, (_, tag) in enumerate(tags) if tag == T.ANSWER_OPEN]
    if answer_opens:  # level 1
        i = answer_opens[-1]
        start = tags[i][0] + len(T.ANSWER_OPEN)
        end = tags[i + 1][0] if i + 1 < len(tags) else len(text)
        body = text[start:end].strip()
        return (body, 1) if body else (None, 0)
    if T.THINK_CLOSE in text:  # level 2
        after = text[text.rindex(T.THINK_CLOSE) + len(T.THINK_CLOSE) :]
        rest = _plain(after).strip()
        if rest:
            return rest, 2
    lines = [ln.strip() for ln in _plain(text).splitlines() if ln.strip()]  # level 3
    return (lines[-1], 3) if lines else (None, 0)


def _plain(text: str) -> str:
    """Text without tool blocks (closed, or unclosed up to the next tag) and without tags."""
    out: list[str] = []
    cursor = 0
    closing: str | None = None  # the close tag awaited while inside a tool block
    for pos, tag in T.find_tags(text):
        if closing is not None:
            if tag == closing:
                closing, cursor = None, pos + len(tag)
                continue
            closing, cursor = None, pos  # unclosed block: it ends at this tag
        out.append(text[cursor:pos])
        cursor = pos + len(tag)
        closing = _TOOL_OPENS.get(tag)
    if closing is None:
        out.append(text[cursor:])
    return "".join(out)


def is_degenerate(text: str) -> bool:
    """[paper] docs/ARCHITECTURE.md §2: True when 5 or more ``<|im_start|>`` fall within a span
    of under 300 characters. Reading: some 5 consecutive occurrences fit in a substring shorter
    than 300 characters, measured from the first character of the first marker to the last
    character of the fifth (``p[i+4] + len("<|im_start|>") - p[i] < 300``)."""
    if not isinstance(text, str):
        return False
    positions = [m.start() for m in re.finditer(re.escape(T.IM_START), text)]
    width = len(T.IM_START)
    n = DEGENERATE_COUNT
    return any(
        positions[i + n - 1] + width - positions[i] < DEGENERATE_SPAN
        for i in range(len(positions) - n + 1)
    )
