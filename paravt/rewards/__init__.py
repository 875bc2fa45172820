"""PARA-GRPO rewards and metrics (docs/ARCHITECTURE.md §4, §6). Pure Python: no torch, no I/O.

- ``accuracy``: ``mcq_accuracy``, ``tvg_iou``, ``token_f1`` and the registry ``ACCURACY`` by task;
- ``weights``: ``RewardWeights`` (plain values; defaults from ``RewardConfig``);
- ``terms``: the ONE registry of reward terms ``TERMS`` / ``TERM_NAMES`` and their functions
  ``base_format_reward``, ``anchor_reward``, ``tool_reward``;
- ``composite``: ``RewardBreakdown``, ``compute_reward``;
- ``metrics``: ``RolloutRecord``, ``aggregate``.

The optional LLM judge, an HTTP client, lives in `paravt.models.openai.judge`.
"""

from paravt.rewards.accuracy import ACCURACY, accuracy, mcq_accuracy, token_f1, tvg_iou
from paravt.rewards.composite import RewardBreakdown, compute_reward
from paravt.rewards.metrics import RolloutRecord, aggregate
from paravt.rewards.terms import (
    CORRECT_THRESHOLD,
    TERM_NAMES,
    TERMS,
    anchor_reward,
    base_format_reward,
    tool_reward,
)
from paravt.rewards.weights import RewardWeights

__all__ = [
    "ACCURACY",
    "accuracy",
    "mcq_accuracy",
    "token_f1",
    "tvg_iou",
    "RewardBreakdown",
    "RewardWeights",
    "anchor_reward",
    "base_format_reward",
    "compute_reward",
    "tool_reward",
    "RolloutRecord",
    "aggregate",
    "TERMS",
    "TERM_NAMES",
    "CORRECT_THRESHOLD",
]
