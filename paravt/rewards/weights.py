"""The reward's plain weights (reward code takes values, not the config tree).

Their defaults are written once, in ``paravt.config.RewardConfig``; ``RewardWeights.default()``
reads them from there (pydantic only: no torch on this import path).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from paravt.config import FormatRules, ToolMode

if TYPE_CHECKING:
    from paravt.config import RewardConfig


#: RewardWeights field -> RewardConfig field, where the names differ.
_CONFIG_NAME = {"anchor_enabled": "anchor"}


@dataclass(frozen=True)
class RewardWeights:
    """Plain weights of the reward; every field is a ``RewardConfig`` field
    (docs/ARCHITECTURE.md §4)."""

    lambda_fmt: float
    lambda_anchor: float
    alpha: float
    beta: float
    gamma: float
    anchor_enabled: bool
    tool_mode: ToolMode
    tool_bonus: float
    bias: float
    format_rules: FormatRules
    tool_sees_responses: bool
    answer_suffix: bool = True
    format_cap_includes_anchor: bool = True
    credit_tool_code: bool = True
    score_prefix: bool = True

    @classmethod
    def from_config(cls, cfg: RewardConfig) -> RewardWeights:
        return cls(**{f.name: getattr(cfg, _CONFIG_NAME.get(f.name, f.name)) for f in fields(cls)})

    @classmethod
    def default(cls, **overrides: Any) -> RewardWeights:
        """The config's defaults [paper], with ``overrides`` (field names of this class)."""
        from paravt.config import RewardConfig

        return replace(cls.from_config(RewardConfig()), **overrides)
