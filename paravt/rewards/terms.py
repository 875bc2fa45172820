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
  chars; +0.3 / 0.2 ``<answer>`` present and +0.2 / 0.1 ``</answer>`` closing the last answer
  (both only when that answer is non-empty); +0.3 a closed, substantive think precedes the first
  tool call (never without a parseable call; with ``credit_tool_code`` a ``<tool_code>`` call
  counts); +0.1 all tags balanced.
- R_anchor: +alpha first ``<think>`` correctly closed; +beta the think -> /think -> answer flow
  (alpha and beta only for a substantive think); -gamma the last ``<think>`` never closed. Range
  [-gamma, alpha+beta]; 0 when ``anchor_enabled`` is off.
- R_tool: ``graduated`` (the authors' released code, the default): 0 without a parseable call,
  0.1 with one, 0.3 once a call executed, +0.5 when R_acc > 0, capped at 1.0; ``parse_bonus``
  (the paper's text): +bonus when at least one call is parseable; ``accumulative`` (PyVision-RL):
  bonus x successful calls, only when the answer is correct (acc >= ``CORRECT_THRESHOLD``);
  ``off``: 0. "Parseable" is ``FormatStats.parseable_calls`` under ``credit_tool_code``.

The flags come from ``paravt.protocol.stats.format_stats`` (their exact definitions are there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from paravt.config.choices import ToolMode
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


def _substantive(stats: FormatStats) -> bool:
    """The first think holds >= ``THINK_MIN_CHARS`` characters. The think-ordering and anchor
    bonuses need it: otherwise a forced ``<think>\\n`` closed at once (``<think></think>``)
    would collect them with no thinking at all (the authors gate them the same way)."""
    return stats.think_chars >= THINK_MIN_CHARS


def base_format_reward(
    stats: FormatStats,
    *,
    answer_suffix: bool = True,
    credit_tool_code: bool = False,
    cap: float | None = BASE_CAP,
) -> float:
    """R_base (capped at ``cap``; None: uncapped). Answer credit needs a non-empty answer
    (``answer_filled``)."""
    filled, thought = stats.answer_filled, _substantive(stats)
    think, opened, closed = (
        (BASE_THINK, BASE_ANSWER_OPEN, BASE_ANSWER_CLOSE)
        if answer_suffix
        else (PLAIN_THINK, PLAIN_ANSWER_OPEN, PLAIN_ANSWER_CLOSE)
    )
    first = stats.think_first_any if credit_tool_code else stats.think_first
    raw = (
        think * thought
        + opened * (stats.answer_opened and filled)
        + closed * (stats.answer_closed and filled)
        + BASE_THINK_FIRST * (first and thought)
        + BASE_BALANCED * stats.balanced
    )
    return raw if cap is None else min(raw, cap)


def anchor_reward(stats: FormatStats, *, alpha: float, beta: float, gamma: float) -> float:
    """R_anchor = alpha [think closed] + beta [flow] - gamma [think unclosed]; alpha and beta
    only for a substantive think (``_substantive``)."""
    thought = _substantive(stats)
    return (
        alpha * (stats.think_closed and thought)
        + beta * (stats.flow and thought)
        - gamma * stats.think_unclosed
    )


def format_reward(stats: FormatStats, w: RewardWeights) -> float:
    """R_fmt under ``w``: R_base and the weighted anchor, capped together at 1.0 (the authors'
    ``compute_format_reward``) or R_base capped alone with the anchor outside the cap."""
    raw = base_format_reward(
        stats, answer_suffix=w.answer_suffix, credit_tool_code=w.credit_tool_code, cap=None
    )
    anchor = w.lambda_anchor * _anchor_value(stats, w)
    if w.format_cap_includes_anchor:
        return min(raw + anchor, BASE_CAP)
    return min(raw, BASE_CAP) + anchor


def tool_reward(
    stats: FormatStats,
    *,
    mode: ToolMode,
    bonus: float,
    correct: bool,
    successful_calls: int | None = None,
    acc: float = 0.0,
    has_response: bool = False,
    credit_tool_code: bool = False,
) -> float:
    """R_tool. ``successful_calls=None`` (offline scoring without execution records) falls back,
    in accumulative mode, to the calls that parsed (``n_tool_call_ok``) and, in graduated mode,
    to "a ``<tool_response>`` is in the text" (``has_response``, the authors' own test)."""
    parseable = stats.parseable_calls(credit_tool_code=credit_tool_code)
    if mode == "parse_bonus":
        return bonus if parseable > 0 else 0.0
    if mode == "graduated":
        if parseable == 0:
            return 0.0
        executed = has_response if successful_calls is None else successful_calls > 0
        level = GRAD_EXECUTED if executed else GRAD_PARSED
        return min(level + GRAD_CORRECT * (acc > 0), GRAD_CAP)
    if mode == "accumulative":
        n = parseable if successful_calls is None else max(0, int(successful_calls))
        return bonus * n if correct else 0.0
    return 0.0


def _anchor_value(stats: FormatStats, w: RewardWeights) -> float:
    if not w.anchor_enabled:
        return 0.0
    return anchor_reward(stats, alpha=w.alpha, beta=w.beta, gamma=w.gamma)


def _tool(x: TermInput, w: RewardWeights) -> float:
    return tool_reward(
        x.stats,
        mode=w.tool_mode,
        bonus=w.tool_bonus,
        correct=x.acc >= CORRECT_THRESHOLD,
        successful_calls=x.successful_calls,
        acc=x.acc,
        has_response=x.has_response,
        credit_tool_code=w.credit_tool_code,
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
        lambda x, w: base_format_reward(
            x.stats, answer_suffix=w.answer_suffix, credit_tool_code=w.credit_tool_code
        ),
        lambda w: 0.0,
    ),
    Term("anchor", lambda x, w: _anchor_value(x.stats, w), lambda w: 0.0),
)
COMPONENT_NAMES: tuple[str, ...] = tuple(t.name for t in COMPONENTS)
