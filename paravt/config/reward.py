"""The reward's section (docs/ARCHITECTURE.md §4, docs/rewards.md); ``paravt.config.sections``
gathers it with the others."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from paravt.config.choices import FormatRules, ToolMode, http_url_or_none
from paravt.config.fields import _Strict


class RewardConfig(_Strict):
    """R = R_acc + lambda_fmt * R_fmt + R_tool, R_fmt = R_base + lambda_anchor * R_anchor
    (docs/ARCHITECTURE.md §4)."""

    lambda_fmt: float = Field(1.0, description="Weight of the format reward [paper].")
    lambda_anchor: float = Field(
        0.5, description="Weight of the anchor reward inside R_fmt [paper]."
    )
    alpha: float = Field(0.4, description="Anchor bonus for a correctly closed </think> [paper].")
    beta: float = Field(
        0.3, description="Anchor bonus for the full think -> /think -> answer flow [paper]."
    )
    gamma: float = Field(
        0.3, description="Anchor penalty for <think> opened but never closed [paper]."
    )
    anchor: bool = Field(True, description="Exploration Anchoring reward on/off (ablation switch).")
    answer_suffix: bool = Field(
        True,
        description="R_base weights [authors]: on = the answer-suffix mode (think 0.2, <answer> "
        "0.3, </answer> 0.2; PARA-GRPO); off = think 0.3, <answer> 0.2, </answer> 0.1 (the "
        "release's vanilla GRPO).",
    )
    format_cap_includes_anchor: bool = Field(
        True,
        description="Cap R_base + lambda_anchor * R_anchor together at 1.0 [authors]; off: cap "
        "R_base alone and add the anchor outside the cap.",
    )
    credit_tool_code: bool = Field(
        True,
        description="Count a <tool_code> block holding a call as a parseable tool call for the "
        "think->tool ordering term and R_tool [authors]; off: only <tool_call> JSON counts.",
    )
    score_prefix: bool = Field(
        True,
        description="Score the forced think prefix with the completion (the paper's anchor acts "
        "on the pinned <think>); off: score only the generated tokens, as the release's "
        "reward does (docs/fidelity.md).",
    )
    format_rules: FormatRules = Field(
        "release",
        description="How R_fmt reads a broken output [authors]: release = the release's format.py "
        "(answer credit only for a closed, non-empty <answer></answer>; ordering needs only "
        "<think> before the first tool tag; gamma only when no </think> at all; balance = equal "
        "tag counts, paid only when the score is already > 0; its parseable-call reading); "
        "paravt = our next-tag rules (docs/rewards.md).",
    )
    tool_mode: ToolMode = Field(
        "graduated",
        description="R_tool: the authors' released graduated reward (0.1 parseable, 0.3 executed "
        "with tool_sees_responses, +0.5 when R_acc > 0, cap 1; the default), the paper text's "
        "parse bonus, PyVision-RL accumulative, or off.",
    )
    tool_sees_responses: bool = Field(
        False,
        description="Graduated R_tool's executed level (0.3) reads the episode's executed calls; "
        "off [authors]: the release scores only the model's own tokens, where no tool response "
        "is, so it pays 0.1 for a parseable call and 0.6 with a right answer.",
    )
    tool_bonus: float = Field(
        0.1, description="Parse bonus, or per-successful-call reward in accumulative mode [paper]."
    )
    bias: float = Field(
        -0.2, description="Added to every reward before group normalisation [paper]."
    )
    judge_url: str | None = Field(
        None,
        description="OpenAI-compatible endpoint of an LLM judge for open-ended answers (None = "
        "token F1).",
    )
    judge_model: str | None = Field(
        None, description="Model name sent to the judge (None: the server's first model)."
    )
    judge_timeout_s: float = Field(
        30.0,
        gt=0,
        description="Whole-request deadline of one judge request (connect, headers and body); "
        "past it the request is retried, then scored by token F1.",
    )

    _judge_url = field_validator("judge_url")(lambda url: http_url_or_none(url))

    @model_validator(mode="after")
    def _judge(self) -> RewardConfig:
        if self.judge_model is not None and self.judge_url is None:
            raise ValueError(
                f"reward.judge_model={self.judge_model!r} has no effect without reward.judge_url; "
                "set reward.judge_url to the judge's endpoint or drop judge_model"
            )
        return self
