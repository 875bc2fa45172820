"""verl reward function (``reward.custom_reward_function``) backed by our composite reward.

For users who run verl's own agent loops (e.g. its tool agent) on paravt data: verl calls
``compute_score(data_source, solution_str, ground_truth, extra_info)`` on the decoded response.
``paravt_agent`` does not need it (it sets ``reward_score`` itself). verl imports this file BY
PATH, so it imports paravt lazily and never imports verl.

The response verl decodes does not contain the forced ``<think>\\n`` prefix (it is prompt), so
it is prepended, as the Episode does (DESIGN §2). Weights are the paper's defaults unless
``extra_info["reward"]`` holds ``RewardConfig`` fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None = None,
                  **kwargs: Any) -> dict[str, Any]:
    """``{"score": R, "acc", "format", "anchor", "tool", ...}`` (verl logs every key)."""
    from paravt.config import RewardConfig, validate
    from paravt.protocol.tags import THINK_PREFIX
    from paravt.rewards import RewardWeights, compute_reward

    info = dict(extra_info or {})
    task = str(info.get("task", "mcq"))
    options = info.get("options")
    options = tuple(options) if options is not None and len(options) else None
    weights = RewardWeights.from_config(validate(RewardConfig, dict(info.get("reward") or {}), "extra_info.reward"))
    answer = info.get("answer", ground_truth)
    b = compute_reward(solution_str or "", task=task, answer=answer, options=options, prefix=THINK_PREFIX,
                       weights=weights)
    return {"score": float(b.reward), "acc": float(b.acc), "format": float(b.format),
            "anchor": float(b.anchor), "tool": float(b.tool), "n_calls": int(b.n_calls),
            "degenerate": bool(b.degenerate)}
