"""The PARA-GRPO reward (DESIGN §4 [paper]), every component returned separately.

    R = R_acc + lambda_fmt * R_fmt + R_tool + bias,   R_fmt = min(R_base, 1) + lambda_anchor * R_anchor

- R_base: +0.2 think content >= 10 chars; +0.3 ``<answer>`` present and +0.2 ``</answer>``
  closing the last answer (both only when that answer is non-empty); +0.3 a closed think
  precedes the first ``<tool_call>`` (never without a call); +0.1 all tags balanced; capped at 1.0.
- R_anchor (outside the cap): +alpha first ``<think>`` correctly closed; +beta the
  think -> /think -> answer flow; -gamma the last ``<think>`` never closed. Range [-gamma, alpha+beta].
- R_tool: ``parse_bonus`` (the paper's text): +bonus when at least one ``<tool_call>`` is closed
  and JSON-parseable; ``graduated`` (the authors' released code): 0 without a parseable call,
  0.1 with one, 0.3 once a call executed, +0.5 when R_acc > 0, capped at 1.0;
  ``accumulative`` (PyVision-RL): bonus x successful calls, only when the answer is correct
  (acc >= ``CORRECT_THRESHOLD``); ``off``: 0.
- ``format_ref``: R_fmt under the DEFAULT weights with the anchor on, whatever the training
  weights are: the one yardstick behind f_tau, so runs with different reward switches compare.
- bias: added last to every rollout (a constant shift before group normalisation).
- Degenerate output (DESIGN §2): acc, format, base, anchor and tool are all 0 and the reward is
  ``0 + bias``: "reward 0" means nothing is earned. We still add the bias because every other
  rollout gets it: leaving it out would rank a degenerate output (0) above a wrong, badly
  formatted one (e.g. -0.2).

The flags come from ``paravt.protocol.stats.format_stats`` (their exact definitions are there).
All reward code is computed on ``prefix + completion``: the forced ``<think>\\n`` counts as opened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from paravt.protocol import tags as T
from paravt.protocol.answer import extract_answer, is_degenerate
from paravt.protocol.stats import THINK_MIN_CHARS, FormatStats, format_stats
from paravt.rewards.accuracy import accuracy

if TYPE_CHECKING:  # config imports pydantic only; kept out of the import path all the same
    from paravt.config import RewardConfig

ToolMode = Literal["parse_bonus", "graduated", "accumulative", "off"]

#: [paper] DESIGN §4 R_base terms.
BASE_THINK, BASE_ANSWER_OPEN, BASE_ANSWER_CLOSE, BASE_THINK_FIRST, BASE_BALANCED = 0.2, 0.3, 0.2, 0.3, 0.1
BASE_CAP = 1.0
#: accuracy at or above which an answer is "correct" (accumulative tool reward): MCQ 1, IoU and
#: F1 >= 0.5 (the usual R@0.5 threshold).
CORRECT_THRESHOLD = 0.5
#: [authors] graduated tool reward levels (ParaVT's released paravt/rl/rewards/tool.py).
GRAD_PARSED, GRAD_EXECUTED, GRAD_CORRECT, GRAD_CAP = 0.1, 0.3, 0.5, 1.0


@dataclass(frozen=True)
class RewardWeights:
    """Plain weights of the reward (defaults: DESIGN §4 [paper])."""

    lambda_fmt: float = 1.0
    lambda_anchor: float = 0.5
    alpha: float = 0.4
    beta: float = 0.3
    gamma: float = 0.3
    anchor_enabled: bool = True
    tool_mode: ToolMode = "parse_bonus"
    tool_bonus: float = 0.1
    bias: float = -0.2

    @classmethod
    def from_config(cls, cfg: RewardConfig) -> RewardWeights:
        return cls(lambda_fmt=cfg.lambda_fmt, lambda_anchor=cfg.lambda_anchor, alpha=cfg.alpha,
                   beta=cfg.beta, gamma=cfg.gamma, anchor_enabled=cfg.anchor,
                   tool_mode=cfg.tool_mode, tool_bonus=cfg.tool_bonus, bias=cfg.bias)


@dataclass(frozen=True)
class RewardBreakdown:
    reward: float  # acc + lambda_fmt * format + tool + bias
    acc: float  # R_acc
    format: float  # R_fmt = format_base + lambda_anchor * anchor (the training weights)
    format_ref: float  # R_fmt under the default weights, anchor on: the f_tau yardstick
    format_base: float  # R_base after the 1.0 cap
    anchor: float  # R_anchor, unweighted (0 when the anchor is disabled)
    tool: float  # R_tool
    bias: float  # the constant shift added to reward
    answer: str | None  # extracted answer
    degenerate: bool
    closed_think: bool  # FormatStats.think_closed
    closed_tool_call: bool  # >= 1 closed, JSON-parseable <tool_call>
    closed_answer: bool  # FormatStats.answer_closed
    tool_code: bool  # a <tool_code> block was emitted (reversion)
    n_calls: int  # <tool_call> blocks, valid or not

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_REFERENCE = RewardWeights()  # the default weights: the f_tau yardstick


def _substantive(stats: FormatStats) -> bool:
    """The first think holds >= ``THINK_MIN_CHARS`` characters. The think-ordering and anchor
    bonuses need it: otherwise a forced ``<think>\\n`` closed at once (``<think></think>``)
    would collect them with no thinking at all (the authors gate them the same way)."""
    return stats.think_chars >= THINK_MIN_CHARS


def base_format_reward(stats: FormatStats, *, cap: float = BASE_CAP) -> float:
    """R_base, capped at ``cap``. Answer credit needs a non-empty answer (``answer_filled``)."""
    filled, thought = stats.answer_filled, _substantive(stats)
    raw = (BASE_THINK * thought
           + BASE_ANSWER_OPEN * (stats.answer_opened and filled)
           + BASE_ANSWER_CLOSE * (stats.answer_closed and filled)
           + BASE_THINK_FIRST * (stats.think_first and thought)
           + BASE_BALANCED * stats.balanced)
    return min(raw, cap)


def anchor_reward(stats: FormatStats, *, alpha: float, beta: float, gamma: float) -> float:
    """R_anchor = alpha [think closed] + beta [flow] - gamma [think unclosed]; alpha and beta
    only for a substantive think (``_substantive``)."""
    thought = _substantive(stats)
    return (alpha * (stats.think_closed and thought) + beta * (stats.flow and thought)
            - gamma * stats.think_unclosed)


def tool_reward(stats: FormatStats, *, mode: ToolMode, bonus: float, correct: bool,
                successful_calls: int | None = None, acc: float = 0.0,
                has_response: bool = False) -> float:
    """R_tool. ``successful_calls=None`` (offline scoring without execution records) falls back,
    in accumulative mode, to the calls that parsed (``n_tool_call_ok``) and, in graduated mode,
    to "a ``<tool_response>`` is in the text" (``has_response``, the authors' own test)."""
    if mode == "parse_bonus":
        return bonus if stats.n_tool_call_ok > 0 else 0.0
    if mode == "graduated":
        if stats.n_tool_call_ok == 0:
            return 0.0
        executed = has_response if successful_calls is None else successful_calls > 0
        level = GRAD_EXECUTED if executed else GRAD_PARSED
        return min(level + GRAD_CORRECT * (acc > 0), GRAD_CAP)
    if mode == "accumulative":
        n = stats.n_tool_call_ok if successful_calls is None else max(0, int(successful_calls))
        return bonus * n if correct else 0.0
    return 0.0


def compute_reward(
    completion: str,
    *,
    task: str,
    answer: object,
    weights: RewardWeights,
    options: Sequence[str] | None = None,
    prefix: str = T.THINK_PREFIX,
    successful_calls: int | None = None,
    acc_override: float | None = None,
) -> RewardBreakdown:
    """The reward of one rollout (main-agent text). ``acc_override`` replaces R_acc (e.g. an LLM
    judge's score). Never raises on any completion; an unknown ``task`` raises DataError."""
    text = (prefix or "") + (completion if isinstance(completion, str) else "")
    stats = format_stats(text)
    pred = extract_answer(text)
    acc = accuracy(task, pred, answer, options) if acc_override is None else float(acc_override)
    flags = dict(answer=pred, closed_think=stats.think_closed,
                 closed_tool_call=stats.tool_call_closed, closed_answer=stats.answer_closed,
                 tool_code=stats.tool_code, n_calls=stats.n_calls)
    if is_degenerate(text):
        return RewardBreakdown(reward=weights.bias, acc=0.0, format=0.0, format_ref=0.0, format_base=0.0,
                               anchor=0.0, tool=0.0, bias=weights.bias, degenerate=True, **flags)
    base = base_format_reward(stats)
    anchor = anchor_reward(stats, alpha=weights.alpha, beta=weights.beta, gamma=weights.gamma) \
        if weights.anchor_enabled else 0.0
    fmt = base + weights.lambda_anchor * anchor
    tool = tool_reward(stats, mode=weights.tool_mode, bonus=weights.tool_bonus,
                       correct=acc >= CORRECT_THRESHOLD, successful_calls=successful_calls, acc=acc,
                       has_response=T.TOOL_RESPONSE_OPEN in text)
    reward = acc + weights.lambda_fmt * fmt + tool + weights.bias
    return RewardBreakdown(reward=reward, acc=acc, format=fmt, format_ref=reference_format(stats),
                           format_base=base, anchor=anchor, tool=tool, bias=weights.bias,
                           degenerate=False, **flags)


def reference_format(stats: FormatStats) -> float:
    """R_fmt with the default weights and the anchor on (the f_tau yardstick, DESIGN §6)."""
    ref = _REFERENCE
    return base_format_reward(stats) + ref.lambda_anchor * anchor_reward(
        stats, alpha=ref.alpha, beta=ref.beta, gamma=ref.gamma)
