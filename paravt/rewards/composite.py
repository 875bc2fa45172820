"""The PARA-GRPO reward of one rollout (docs/ARCHITECTURE.md §4 [paper]), every term returned
separately.

    R = R_acc + lambda_fmt * R_fmt + R_tool + bias        (R_fmt: ``paravt.rewards.terms``)

The terms and their weights are ``paravt.rewards.terms.TERMS`` (the one list); R_fmt's parts
(``format_base``, ``anchor``) are ``COMPONENTS``. Besides them:

- ``format``: R_fmt under the run's weights, on the text the reward scores;
- ``format_generated``: R_fmt under the run's weights on the GENERATED text only (forced think
  prefixes not scored): the f_tau of training logs, as the authors' release logs its
  ``format_reward`` (docs/fidelity.md);
- ``format_ref``: R_fmt under the DEFAULT weights with the anchor on, on the scored text: the
  earlier yardstick (``f_tau_ref`` in the metrics), comparable across runs with different switches;
- bias: added last to every rollout (a constant shift before group normalisation).
- Degenerate output (docs/ARCHITECTURE.md §2): every term is 0 and the reward is ``0 + bias``:
"reward 0" means nothing is earned. We still add the bias because every other rollout gets it:
leaving it out would rank a degenerate output (0) above a wrong, badly formatted one (e.g. -0.2).

The scored text is ``prefix + completion`` (the forced ``<think>\\n`` counts as opened) unless
``score_prefix`` is off, when only ``completion`` is scored.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from paravt.protocol import tags as T
from paravt.protocol.answer import extract_with_level, is_degenerate
from paravt.protocol.stats import FormatStats, format_stats
from paravt.rewards.accuracy import accuracy
from paravt.rewards.terms import COMPONENTS, TERMS, TermInput, format_reward
from paravt.rewards.weights import RewardWeights


@dataclass(frozen=True)
class RewardBreakdown:
    reward: float  # sum of coef * term over TERMS + bias
    terms: Mapping[str, float]  # unweighted value of every term of TERMS, by name
    components: Mapping[str, float]  # R_fmt's parts (COMPONENTS): format_base, anchor
    format: float  # R_fmt (the run's weights) of the scored text
    format_generated: float  # R_fmt (the run's weights) of the generated text: f_tau
    format_ref: float  # R_fmt under the default weights of the scored text: f_tau_ref
    bias: float  # the constant shift added to reward
    answer: str | None  # extracted answer
    degenerate: bool
    closed_think: bool  # FormatStats.think_closed
    closed_tool_call: bool  # >= 1 closed, JSON-parseable <tool_call>
    closed_answer: bool  # FormatStats.answer_closed
    tool_code: bool  # a <tool_code> block was emitted (reversion)
    n_calls: int  # <tool_call> blocks, valid or not
    n_parseable: int = 0  # parseable calls (FormatStats.parseable_calls under the run's rules)
    answer_level: int = 0  # protocol.answer.answer_level: 1 <answer>, 2 after </think>, 3 last line

    @property
    def finished(self) -> bool:
        """The model finished an answer: an ``<answer>`` block or text after ``</think>`` (levels
        1–2), not the last line of a think that never closed."""
        return self.answer is not None and self.answer_level in (1, 2)

    @property
    def acc(self) -> float:
        return self.terms["acc"]  # R_acc

    @property
    def format_base(self) -> float:
        return self.components["format_base"]  # R_base after its own 1.0 cap

    @property
    def anchor(self) -> float:
        return self.components["anchor"]  # R_anchor, unweighted (0 when the anchor is disabled)

    @property
    def tool(self) -> float:
        return self.terms["tool"]  # R_tool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def scalars(self) -> dict[str, float]:
        """Every term by name, R_fmt (run weights and yardstick) and the call count: what verl's
        ``reward_extra_info`` and ``paravt score`` report next to the reward."""
        return {
            **self.terms,
            **self.components,
            "format": self.format,
            "format_generated": self.format_generated,
            "format_ref": self.format_ref,
            "n_calls": float(self.n_calls),
        }


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
    generated: str | None = None,
) -> RewardBreakdown:
    """The reward of one rollout (main-agent text). ``acc_override`` replaces R_acc (e.g. an LLM
    judge's score). ``generated``: the sampled text without forced prefixes (default
    ``completion``: the prefix is passed apart). A ``completion`` that ends with ``<|im_end|>``
    is one whose last turn stopped at its stop token, as the release's decoded training text
    holds it (``episode_reward`` appends it so): the ``release`` reading of ``format_stats`` sees
    it, every other term reads the text without it; without it, a turn cut by the budget (or one
    not known). Never raises on any completion; an unknown ``task`` raises DataError."""
    completion = completion if isinstance(completion, str) else ""
    stopped, completion = completion.endswith(T.IM_END), completion.removesuffix(T.IM_END)
    gen = completion if not isinstance(generated, str) else generated.removesuffix(T.IM_END)
    text = (prefix or "") + completion if weights.score_prefix else gen
    stats = format_stats(text, stopped=stopped)
    pred, level = extract_with_level(text)
    acc = accuracy(task, pred, answer, options) if acc_override is None else float(acc_override)
    zero = _degenerate(stats, weights, pred, level)
    if is_degenerate(text):
        return zero
    x = TermInput(stats, acc, successful_calls, has_response=T.TOOL_RESPONSE_OPEN in text)
    terms = {t.name: t.value(x, weights) for t in TERMS}
    return replace(
        zero,
        reward=sum(t.coef(weights) * terms[t.name] for t in TERMS) + weights.bias,
        terms=terms,
        components={t.name: t.value(x, weights) for t in COMPONENTS},
        format=terms["format"],
        format_generated=0.0
        if is_degenerate(gen)
        else format_reward(format_stats(gen, stopped=stopped), weights),
        format_ref=reference_format(stats),
        degenerate=False,
    )


def _degenerate(
    stats: FormatStats, weights: RewardWeights, pred: str | None, level: int
) -> RewardBreakdown:
    """What a degenerate text scores: every term 0, reward = bias (a scored text replaces the
    numbers)."""
    return RewardBreakdown(
        reward=weights.bias,
        terms={t.name: 0.0 for t in TERMS},
        components={t.name: 0.0 for t in COMPONENTS},
        format=0.0,
        format_generated=0.0,
        format_ref=0.0,
        bias=weights.bias,
        answer=pred,
        degenerate=True,
        closed_think=stats.think_closed,
        closed_tool_call=stats.tool_call_closed,
        closed_answer=stats.answer_closed,
        tool_code=stats.tool_code,
        n_calls=stats.n_calls,
        n_parseable=stats.parseable_calls(
            credit_tool_code=weights.credit_tool_code, rules=weights.format_rules
        ),
        answer_level=level,
    )


def reference_format(stats: FormatStats) -> float:
    """R_fmt with the default weights and the anchor on (the f_tau yardstick,
    docs/ARCHITECTURE.md §6)."""
    return format_reward(stats, _reference())


@functools.cache
def _reference() -> RewardWeights:
    return RewardWeights.default(anchor_enabled=True)
