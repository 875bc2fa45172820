"""Format statistics of one output: the ONE source of the format rewards (docs/ARCHITECTURE.md §4)
and the closure/reversion metrics (docs/ARCHITECTURE.md §6). Computed on the text the reward sees
(think prefix + completion), with observation contents removed (``tags.strip_observations``).

Definitions (each flag is used by exactly one reward term or metric, named in brackets):

- ``think_opened``: a ``<think>`` tag is present.
- ``think_closed`` [anchor +alpha, closure metric]: the FIRST ``<think>`` is correctly closed:
  the next protocol tag after it is ``</think>``.
- ``think_unclosed`` [anchor -gamma]: the LAST ``<think>`` has no ``</think>`` after it.
- ``think_chars`` [base +0.2 when >= 10]: length of the stripped content of the first think
  block (to its ``</think>``, or to the next tag / the end when unclosed).
- ``think_first`` [base +0.3]: think precedes the first tool call: a ``<think>`` … ``</think>``
  pair occurs before the first ``<tool_call>``, and at least one call is closed and parseable
  (``n_tool_call_ok``). Without a parseable call it is False (paper: "+0.3 for correct think→tool
  ordering"; the authors' ``think_before_tool`` is False without one), so a well-formed direct
  answer earns less format than well-formed tool use and an empty ``<tool_call></tool_call>``
  earns nothing. ``<tool_code>`` is not a tool call here (it is the reversion the metrics count).
- ``think_first_any`` [base +0.3 with ``reward.credit_tool_code``]: as ``think_first`` with the
  first ``<tool_call>`` OR ``<tool_code>`` opening, and at least one parseable call of either form
  (``n_tool_call_ok + n_tool_code_ok``): the authors' ``think_before_tool`` and
  ``has_parseable_tool_call`` credit the pretrained ``<tool_code>`` form too.
- ``answer_opened`` [base +0.3, gated by ``answer_filled``]: an ``<answer>`` tag is present.
- ``answer_closed`` [base +0.2 gated by ``answer_filled``, closure metric]: the last
  ``<answer>`` is followed by ``</answer>`` as the next protocol tag.
- ``answer_filled``: the body of the last ``<answer>`` (to its next tag, or the end) holds
  non-whitespace text. ``<answer></answer>`` earns no answer credit and no flow bonus (the
  empty-tag exploit; the authors gate answer credit the same way).
- ``balanced`` [base +0.1]: at least one protocol tag is present and, for each pair think,
  tool_call, answer, tool_code, tool_response, the occurrences alternate open, close, open, close …
  and end closed (zero occurrences of a pair is balanced; text with no tag at all is not).
- ``flow`` [anchor +beta]: the think/answer tags, read in order and ignoring tool tags, are one or
  more ``<think></think>`` pairs followed by exactly one ``<answer></answer>``, and that answer
  is filled (``answer_filled``).
- ``n_tool_call`` / ``n_tool_call_ok`` [tool parse bonus, closure metric]: ``<tool_call>``
  openings / those closed whose body parsed as a JSON object with a ``name`` (the parser's
  tolerant JSON: trailing commas and single quotes accepted; python-style calls are not JSON).
- ``n_tool_code`` [reversion metric]: ``<tool_code>`` openings.
- ``n_tool_code_ok`` [R_tool and ordering with ``reward.credit_tool_code``]: ``<tool_code>`` blocks
  whose body (to the next tag or the end) holds a line with a call in it: a ``(`` on a line that
  is not a ``#`` comment (the authors' ``has_parseable_tool_call`` rule for ``<tool_code>``).
- ``n_calls`` [kappa]: calls the parser returns (``<tool_call>`` blocks, valid or not).

``release`` (a ``ReleaseStats``) reads the same text as the authors' released reward reads it
(``reward.format_rules: release``, the default): substring and first-pair rules instead of the
next-tag rules above. Its flags are defined on ``ReleaseStats``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from paravt.config.choices import FormatRules
from paravt.protocol import tags as T
from paravt.protocol.parser import parse_calls

THINK_MIN_CHARS = 10  # [paper] docs/ARCHITECTURE.md §4: think content of at least 10 characters

_PAIRS = (
    (T.THINK_OPEN, T.THINK_CLOSE),
    (T.TOOL_CALL_OPEN, T.TOOL_CALL_CLOSE),
    (T.ANSWER_OPEN, T.ANSWER_CLOSE),
    (T.TOOL_CODE_OPEN, T.TOOL_CODE_CLOSE),
    (T.TOOL_RESPONSE_OPEN, T.TOOL_RESPONSE_CLOSE),
)


@dataclass(frozen=True)
class ReleaseStats:
    """The release's reading of a text (release ``paravt/rl/rewards/format.py`` and ``utils.py``,
    commit cf55249; docs/rewards.md lists the rules with their lines). Each flag is used by the
    term named in brackets under ``reward.format_rules: release``.

    - ``think_chars`` [base think credit, ordering, alpha, beta: >= 10]: stripped content of the
      first ``<think>``: to the first ``</think>`` after it, or, with none after it, to the first
      ``<tool_``, ``<answer>`` or ``<|im_end|>`` (or the end).
    - ``think_closed`` [alpha]: a ``</think>`` comes after the first ``<think>`` (the release
      asks only for a ``</think>`` anywhere; the paper's "correctly closed" rules out one that
      closes nothing).
    - ``think_unclosed`` [gamma]: a ``<think>`` and no ``</think>`` anywhere.
    - ``answer`` [base answer credit]: some ``<answer>`` … ``</answer>`` pair (each opening to
      the first closing after it) holds non-whitespace text.
    - ``flow`` [beta]: such a pair opens after the ``</think>`` that closes the first ``<think>``
      (the release asks for both anywhere; the paper's flow is think -> /think -> answer).
    - ``counts_equal`` [balance]: as many openings as closings of think, tool_call, tool_code
      and answer (a text with none of them has equal counts).
    - ``json_calls`` [ordering, R_tool]: ``<tool_call>`` bodies, each to the first
      ``</tool_call>`` after it or to the end of the text, that are a strict JSON object with a
      ``name`` key: a trailing unclosed block counts when nothing but whitespace follows it.
    - ``code_calls`` [ordering, R_tool with ``reward.credit_tool_code``]: ``<tool_code>`` bodies
      (to ``</tool_code>`` or the end) with a line that holds ``(`` and is not a ``#`` comment.
    - ``think_before_call`` / ``think_before_any`` [ordering]: the first ``<think>`` opens before
      the first ``<tool_call>`` / the first ``<tool_call>`` or ``<tool_code>``.
    """

    think_chars: int
    think_closed: bool
    think_unclosed: bool
    answer: bool
    flow: bool
    counts_equal: bool
    json_calls: int
    code_calls: int
    think_before_call: bool
    think_before_any: bool


@dataclass(frozen=True)
class FormatStats:
    think_opened: bool
    think_closed: bool
    think_unclosed: bool
    think_chars: int
    think_first: bool
    answer_opened: bool
    answer_closed: bool
    answer_filled: bool
    balanced: bool
    flow: bool
    n_tool_call: int
    n_tool_call_ok: int
    n_tool_code: int
    n_calls: int
    release: ReleaseStats
    n_tool_code_ok: int = 0
    think_first_any: bool = False

    @property
    def tool_call_closed(self) -> bool:
        """At least one closed and JSON-parseable ``<tool_call>``."""
        return self.n_tool_call_ok > 0

    @property
    def tool_code(self) -> bool:
        return self.n_tool_code > 0

    def parseable_calls(self, *, credit_tool_code: bool, rules: FormatRules) -> int:
        """Parseable tool calls: JSON ``<tool_call>`` blocks (``paravt``: closed and read by the
        parser's tolerant JSON; ``release``: ``ReleaseStats.json_calls``), plus ``<tool_code>``
        blocks holding a call when ``credit_tool_code`` (the authors' rule)."""
        if rules == "release":
            return self.release.json_calls + (self.release.code_calls if credit_tool_code else 0)
        return self.n_tool_call_ok + (self.n_tool_code_ok if credit_tool_code else 0)


def format_stats(text: str, *, stopped: bool = False) -> FormatStats:
    """Format statistics of ``text`` (pass the think prefix + completion). ``stopped``: the last
    turn ended at its stop token, which the release's decoded training text keeps (its
    ``release`` reading then sees ``<|im_end|>`` at the end, so a trailing unclosed JSON block
    does not parse, as its parser does not run it; a cut turn has none). Never raises."""
    if not isinstance(text, str):
        text = ""
    text = T.strip_observations(text)
    tags = T.find_tags(text)
    names = [tag for _, tag in tags]
    parsed = parse_calls(text)
    ok = sum(1 for c in parsed.calls if c.closed and c.source == "json" and c.name is not None)
    filled = bool(_body(text, tags, T.ANSWER_OPEN, first=False))
    code_ok = _tool_code_calls(text, tags)
    return FormatStats(
        think_opened=T.THINK_OPEN in names,
        think_closed=_next_is(names, T.THINK_OPEN, T.THINK_CLOSE, first=True),
        think_unclosed=_last_unclosed(names),
        think_chars=_think_chars(text, tags),
        think_first=ok > 0 and _think_first(names),
        answer_opened=T.ANSWER_OPEN in names,
        answer_closed=_next_is(names, T.ANSWER_OPEN, T.ANSWER_CLOSE, first=False),
        answer_filled=filled,
        balanced=any(n in T.PROTOCOL_TAGS for n in names)
        and all(_alternates(names, o, c) for o, c in _PAIRS),
        flow=filled and _flow(names),
        n_tool_call=parsed.n_tool_call,
        n_tool_call_ok=ok,
        n_tool_code=parsed.n_tool_code,
        n_calls=len(parsed.calls),
        release=release_stats(text + T.IM_END if stopped else text),
        n_tool_code_ok=code_ok,
        think_first_any=ok + code_ok > 0 and _think_first(names, any_tool=True),
    )


def release_stats(text: str) -> ReleaseStats:
    """``ReleaseStats`` of ``text`` (observation contents already removed). Never raises."""
    think = text.find(T.THINK_OPEN)
    body_at = think + len(T.THINK_OPEN)
    closing = text.find(T.THINK_CLOSE, body_at) if think >= 0 else -1
    if think < 0:
        think_body = ""
    elif closing >= 0:
        think_body = text[body_at:closing]
    else:
        ends = [text.find(m, body_at) for m in ("<tool_", T.ANSWER_OPEN, T.IM_END)]
        think_body = text[body_at : min([e for e in ends if e >= 0], default=len(text))]
    answers = [at for at, body in _pairs(text, T.ANSWER_OPEN, T.ANSWER_CLOSE, closed=True) if body]
    call_at = text.find(T.TOOL_CALL_OPEN)
    code_at = text.find(T.TOOL_CODE_OPEN)
    return ReleaseStats(
        think_chars=len(think_body.strip()),
        think_closed=closing >= 0,
        think_unclosed=think >= 0 and T.THINK_CLOSE not in text,
        answer=bool(answers),
        flow=closing >= 0 and any(at > closing for at in answers),
        counts_equal=all(
            text.count(o) == text.count(c)
            for o, c in (
                (T.THINK_OPEN, T.THINK_CLOSE),
                (T.TOOL_CALL_OPEN, T.TOOL_CALL_CLOSE),
                (T.TOOL_CODE_OPEN, T.TOOL_CODE_CLOSE),
                (T.ANSWER_OPEN, T.ANSWER_CLOSE),
            )
        ),
        json_calls=sum(
            _json_call(body) for _, body in _pairs(text, T.TOOL_CALL_OPEN, T.TOOL_CALL_CLOSE)
        ),
        code_calls=sum(
            _code_call(body) for _, body in _pairs(text, T.TOOL_CODE_OPEN, T.TOOL_CODE_CLOSE)
        ),
        think_before_call=0 <= think < _first(call_at),
        think_before_any=0 <= think < min(_first(call_at), _first(code_at)),
    )


def _first(pos: int) -> float:
    return float("inf") if pos < 0 else pos


def _pairs(
    text: str, open_tag: str, close_tag: str, *, closed: bool = False
) -> list[tuple[int, str]]:
    """``(position, stripped body)`` of each ``open_tag`` block, left to right: the body runs to
    the first ``close_tag`` after it, or (unless ``closed``) to the end of the text, and the next
    block is looked for after it."""
    out: list[tuple[int, str]] = []
    at = text.find(open_tag)
    while at >= 0:
        start = at + len(open_tag)
        end = text.find(close_tag, start)
        if end < 0:
            if not closed:
                out.append((at, text[start:].strip()))
            break
        out.append((at, text[start:end].strip()))
        at = text.find(open_tag, end + len(close_tag))
    return out


def _json_call(body: str) -> bool:
    """A strict JSON object with a ``name`` key (the release's ``json.loads``)."""
    if not body or body.startswith(T.IM_END):
        return False
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and "name" in data


def _code_call(body: str) -> bool:
    if not body or body.startswith(T.IM_END):
        return False
    lines = (ln.strip() for ln in body.splitlines())
    return any(ln and "(" in ln and not ln.startswith("#") for ln in lines)


def _tool_code_calls(text: str, tags: list[tuple[int, str]]) -> int:
    """``<tool_code>`` blocks whose body holds a call (a line with ``(`` that is not a comment)."""
    n = 0
    for i, (pos, tag) in enumerate(tags):
        if tag != T.TOOL_CODE_OPEN:
            continue
        end = tags[i + 1][0] if i + 1 < len(tags) else len(text)
        body = text[pos + len(tag) : end]
        lines = (ln.strip() for ln in body.splitlines())
        n += any("(" in ln and not ln.startswith("#") for ln in lines)
    return n


def _next_is(names: list[str], open_tag: str, close_tag: str, *, first: bool) -> bool:
    idx = [i for i, n in enumerate(names) if n == open_tag]
    if not idx:
        return False
    i = idx[0] if first else idx[-1]
    return i + 1 < len(names) and names[i + 1] == close_tag


def _last_unclosed(names: list[str]) -> bool:
    idx = [i for i, n in enumerate(names) if n == T.THINK_OPEN]
    return bool(idx) and T.THINK_CLOSE not in names[idx[-1] + 1 :]


def _body(text: str, tags: list[tuple[int, str]], tag: str, *, first: bool) -> str:
    """Stripped content of the first (or last) ``tag`` block: to the next tag, or the end."""
    idx = [i for i, (_, t) in enumerate(tags) if t == tag]
    if not idx:
        return ""
    i = idx[0] if first else idx[-1]
    start = tags[i][0] + len(tag)
    end = tags[i + 1][0] if i + 1 < len(tags) else len(text)
    return text[start:end].strip()


def _think_chars(text: str, tags: list[tuple[int, str]]) -> int:
    return len(_body(text, tags, T.THINK_OPEN, first=True))


def _think_first(names: list[str], *, any_tool: bool = False) -> bool:
    tool_tags = (T.TOOL_CALL_OPEN, T.TOOL_CODE_OPEN) if any_tool else (T.TOOL_CALL_OPEN,)
    first = next((i for i, n in enumerate(names) if n in tool_tags), None)
    if first is None:
        return False
    before = names[:first]
    return T.THINK_OPEN in before and T.THINK_CLOSE in before[before.index(T.THINK_OPEN) :]


def _alternates(names: list[str], open_tag: str, close_tag: str) -> bool:
    seq = [n for n in names if n in (open_tag, close_tag)]
    return len(seq) % 2 == 0 and all(
        n == (open_tag if i % 2 == 0 else close_tag) for i, n in enumerate(seq)
    )


def _flow(names: list[str]) -> bool:
    seq = [n for n in names if n in (T.THINK_OPEN, T.THINK_CLOSE, T.ANSWER_OPEN, T.ANSWER_CLOSE)]
    if len(seq) < 4 or seq[-2:] != [T.ANSWER_OPEN, T.ANSWER_CLOSE]:
        return False
    head = seq[:-2]
    no_answer = T.ANSWER_OPEN not in head and T.ANSWER_CLOSE not in head
    return no_answer and _alternates(head, T.THINK_OPEN, T.THINK_CLOSE)
