"""The reward's terms: ONE registry of pure functions (docs/ARCHITECTURE.md §4 [paper]).

    R = sum over TERMS of coef(w) * value(x, w)  +  bias
      = R_acc + lambda_fmt * R_fmt + R_tool + bias
    R_fmt = min(R_base + lambda_anchor * R_anchor, 1)      (``format_cap_includes_anchor``, default)
          = min(R_base, 1) + lambda_anchor * R_anchor      (otherwise)

``compute_reward``, the training metrics (``reward/<term>``), verl's ``reward_extra_info``,
``paravt score``'s output line and the report all read ``TERMS`` / ``TERM_NAMES``: a new term is
one function here, one ``Term`` line in ``TERMS`` and its weight field(s) in ``RewardConfig``
(docs/extending.md). R_fmt's two parts are reported beside the terms as ``COMPONENTS``
(``format_base``, ``anchor``).

- R_base (``answer_suffix`` on / off, the authors' two modes): +0.2 / 0.3 think content >= 10
  chars; +0.3 / 0.2 ``<answer>`` and +0.2 / 0.1 ``</answer>``; +0.3 think precedes the first tool
  call (never without a parseable call; with ``credit_tool_code`` a ``<tool_code>`` call counts);
  +0.1 balanced tags.
- R_anchor: +alpha think correctly closed; +beta the think -> /think -> answer flow (alpha and
  beta only for a substantive think); -gamma think opened, never closed. Range
  [-gamma, alpha+beta]; 0 when ``anchor_enabled`` is off.
- ``format_rules`` says how each condition reads a broken output. ``release`` (the default, the
  release's format.py; flags ``FormatStats.release``): answer credit (both parts) only for a
  closed, non-empty ``<answer>…</answer>`` pair; ordering: a ``<think>`` opens before the first
  tool tag; alpha: a ``</think>`` after the first ``<think>``; beta: a non-empty answer pair after
  it; gamma: no ``</think>`` anywhere; balance: equal tag counts (think, tool_call, tool_code,
  answer), paid only when R_base without it plus lambda_anchor * R_anchor is already > 0.
  ``paravt`` (ours before issue 46): next-tag rules (``FormatStats`` flags), the ``<answer>``
  part for a filled answer even unclosed, the ordering term after a CLOSED think, gamma on the
  last ``<think>``, balance as alternation.
- R_tool: ``graduated`` (the authors' released code, the default): 0 without a parseable call,
  0.1 with one, 0.3 once a call executed (only with ``tool_sees_responses``: the release scores
  the model's own tokens, where no tool response is, so its 0.3 level never fires), +0.5 when
  R_acc > 0, capped at 1.0; ``parse_bonus`` (the paper's text): +bonus when at least one call is
  parseable; ``accumulative`` (PyVision-RL): bonus x successful calls, only when the answer is
  correct (acc >= ``CORRECT_THRESHOLD``); ``off``: 0. "Parseable" is
  ``FormatStats.parseable_calls`` under ``credit_tool_code`` and ``format_rules``.

The flags come from ``paravt.protocol.stats.format_stats`` (their exact definitions are there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from paravt.config.choices import FormatRules, ToolMode
from paravt.protocol.stats import THINK_MIN_CHARS, FormatStats
from paravt.rewards.weights import RewardWeights

#: [paper] docs/ARCHITECTURE.md §4 R_base terms: answer-suffix mode (think, <answer>, </answer>).
BASE_THINK, BASE_ANSWER_OPEN, BASE_ANSWER_CLOSE = 0.2, 0.3, 0.2
#: [authors] the release's other mode (answer_suffix off: its vanilla GRPO): think dominates.
PLAIN_THINK, PLAIN_ANSWER_OPEN, PLAIN_ANSWER_CLOSE = 0.3, 0.2, 0.1
BASE_THINK_FIRST, BASE_BALANCED = 0.3, 0.1
BASE_CAP = 1.0
#: accuracy at or above which an answer is "correct" (accumulative tool reward, eval's
#: ``correct``): MCQ 1, IoU and F1 >= 0.5 (the usual R@0.5 threshold).
CORRECT_THRESHOLD = 0.5
#: [authors] graduated tool reward levels (ParaVT's released paravt/rl/rewards/tool.py).
GRAD_PARSED, GRAD_EXECUTED, GRAD_CORRECT, GRAD_CAP = 0.1, 0.3, 0.5, 1.0


@dataclass(frozen=True)
class TermInput:
    """What every term may read of one scored rollout."""

    stats: FormatStats  # format flags of the scored text
    acc: float  # R_acc (already computed: terms may depend on it)
    successful_calls: int | None  # tool calls that ran; None offline (no execution record)
    has_response: bool  # a ``<tool_response>`` is in the scored text


@dataclass(frozen=True)
class Term:
    name: str  # the key in RewardBreakdown.terms, in logs (``reward/<name>``) and outputs
    value: Callable[[TermInput, RewardWeights], float]  # the unweighted term
    coef: Callable[[RewardWeights], float]  # its weight in R


def _substantive(stats: FormatStats, rules: FormatRules) -> bool:
    """The first think holds >= ``THINK_MIN_CHARS`` characters. The think-ordering and anchor
    bonuses need it: otherwise a forced ``<think>\\n`` closed at once (``<think></think>``)
    would collect them with no thinking at all (the authors gate them the same way)."""
    chars = stats.release.think_chars if rules == "release" else stats.think_chars
    return chars >= THINK_MIN_CHARS


def base_format_reward(
    stats: FormatStats,
    *,
    answer_suffix: bool,
    credit_tool_code: bool,
    rules: FormatRules,
    cap: float | None = BASE_CAP,
    anchor: float = 0.0,
) -> float:
    """R_base (capped at ``cap``; None: uncapped). Answer credit needs a non-empty answer.
    ``anchor``: lambda_anchor * R_anchor, which the ``release`` balance gate adds to the score
    before it asks "> 0" (it changes nothing else)."""
    thought = _substantive(stats, rules)
    think, opened, closed = (
        (BASE_THINK, BASE_ANSWER_OPEN, BASE_ANSWER_CLOSE)
        if answer_suffix
        else (PLAIN_THINK, PLAIN_ANSWER_OPEN, PLAIN_ANSWER_CLOSE)
    )
    if rules == "release":
        r = stats.release
        before = r.think_before_any if credit_tool_code else r.think_before_call
        parseable = stats.parseable_calls(credit_tool_code=credit_tool_code, rules=rules) > 0
        raw = (
            think * thought
            + (opened + closed) * r.answer
            + BASE_THINK_FIRST * (thought and parseable and before)
        )
        raw += BASE_BALANCED * (r.counts_equal and raw + anchor > 0)
    else:
        filled = stats.answer_filled
        first = stats.think_first_any if credit_tool_code else stats.think_first
        raw = (
            think * thought
            + opened * (stats.answer_opened and filled)
            + closed * (stats.answer_closed and filled)
            + BASE_THINK_FIRST * (first and thought)
            + BASE_BALANCED * stats.balanced
        )
    return raw if cap is None else min(raw, cap)


def anchor_reward(
    stats: FormatStats, *, alpha: float, beta: float, gamma: float, rules: FormatRules
) -> float:
    """R_anchor = alpha [think closed] + beta [flow] - gamma [think unclosed]; alpha and beta
    only for a substantive think (``_substantive``); each flag read under ``rules``."""
    thought = _substantive(stats, rules)
    if rules == "release":
        closed, flow, unclosed = (
            stats.release.think_closed,
            stats.release.flow,
            stats.release.think_unclosed,
        )
    else:
        closed, flow, unclosed = stats.think_closed, stats.flow, stats.think_unclosed
    return alpha * (closed and thought) + beta * (flow and thought) - gamma * unclosed


def format_reward(stats: FormatStats, w: RewardWeights) -> float:
    """R_fmt under ``w``: R_base and the weighted anchor, capped together at 1.0 (the authors'
    ``compute_format_reward``) or R_base capped alone with the anchor outside the cap."""
    anchor = w.lambda_anchor * _anchor_value(stats, w)
    raw = _base(stats, w, cap=None, anchor=anchor)
    if w.format_cap_includes_anchor:
        return min(raw + anchor, BASE_CAP)
    return min(raw, BASE_CAP) + anchor


def tool_reward(
    stats: FormatStats,
    *,
    mode: ToolMode,
    bonus: float,
    rules: FormatRules,
    successful_calls: int | None = None,
    acc: float = 0.0,
    has_response: bool = False,
    credit_tool_code: bool = False,
    sees_responses: bool = True,
) -> float:
    """R_tool. ``successful_calls=None`` (offline scoring without execution records) falls back,
    in accumulative mode, to the calls that parsed and, in graduated mode, to "a
    ``<tool_response>`` is in the text" (``has_response``, the authors' own test). Graduated
    mode with ``sees_responses`` off never reaches the executed level (the release's reward
    reads the model's tokens only). Accumulative mode pays only a correct answer
    (``acc >= CORRECT_THRESHOLD``)."""
    parseable = stats.parseable_calls(credit_tool_code=credit_tool_code, rules=rules)
    if mode == "parse_bonus":
        return bonus if parseable > 0 else 0.0
    if mode == "graduated":
        if parseable == 0:
            return 0.0
        executed = has_response if successful_calls is None else successful_calls > 0
        level = GRAD_EXECUTED if executed and sees_responses else GRAD_PARSED
        return min(level + GRAD_CORRECT * (acc > 0), GRAD_CAP)
    if mode == "accumulative":
        n = parseable if successful_calls is None else max(0, int(successful_calls))
        return bonus * n if acc >= CORRECT_THRESHOLD else 0.0
    return 0.0


def _base(stats: FormatStats, w: RewardWeights, *, cap: float | None, anchor: float) -> float:
    return base_format_reward(
        stats,
        answer_suffix=w.answer_suffix,
        credit_tool_code=w.credit_tool_code,
        rules=w.format_rules,
        cap=cap,
        anchor=anchor,
    )


def _anchor_value(stats: FormatStats, w: RewardWeights) -> float:
    if not w.anchor_enabled:
        return 0.0
    return anchor_reward(stats, alpha=w.alpha, beta=w.beta, gamma=w.gamma, rules=w.format_rules)


def _tool(x: TermInput, w: RewardWeights) -> float:
    return tool_reward(
        x.stats,
        mode=w.tool_mode,
        bonus=w.tool_bonus,
        successful_calls=x.successful_calls,
        acc=x.acc,
        has_response=x.has_response,
        credit_tool_code=w.credit_tool_code,
        rules=w.format_rules,
        sees_responses=w.tool_sees_responses,
    )


TERMS: tuple[Term, ...] = (
    Term("acc", lambda x, w: x.acc, lambda w: 1.0),
    Term("format", lambda x, w: format_reward(x.stats, w), lambda w: w.lambda_fmt),
    Term("tool", _tool, lambda w: 1.0),
)
TERM_NAMES: tuple[str, ...] = tuple(t.name for t in TERMS)

#: R_fmt's two parts, reported beside the terms (not summed into R): R_base (its own 1.0 cap)
#: and R_anchor unweighted (0 when the anchor is off).
COMPONENTS: tuple[Term, ...] = (
    Term(
        "format_base",
        lambda x, w: _base(
            x.stats, w, cap=BASE_CAP, anchor=w.lambda_anchor * _anchor_value(x.stats, w)
        ),
        lambda w: 0.0,
    ),
    Term("anchor", lambda x, w: _anchor_value(x.stats, w), lambda w: 0.0),
)
COMPONENT_NAMES: tuple[str, ...] = tuple(t.name for t in COMPONENTS)
