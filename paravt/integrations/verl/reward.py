"""verl reward function (``reward.custom_reward_function``) backed by our composite reward.

For users who run verl's own agent loops (e.g. its tool agent) on paravt data: verl calls
``compute_score(data_source, solution_str, ground_truth, extra_info)`` on the decoded response.
``paravt_agent`` does not need it (it sets ``reward_score`` itself). verl imports this file BY
PATH, so it imports paravt lazily and never imports verl.

The response verl decodes does not contain a forced ``<think>\\n`` prefix (it is prompt). It is
prepended only when the run forced it: ``extra_info["think_prefix"]`` (written from
``rollout.think_prefix`` by ``write_verl_parquet``; default on, as the config's) — and never
doubled when the response already opens with ``<think>`` (``tags.with_prefix``). Weights are the
paper's defaults unless ``extra_info["reward"]`` holds ``RewardConfig`` fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """``{"score": R, <every term of TERMS and COMPONENTS>, "format_generated", "format_ref",
    "n_calls", "degenerate"}``
    (verl logs every key)."""
    from paravt.config import RewardConfig, validate
    from paravt.protocol.tags import THINK_PREFIX, with_prefix
    from paravt.rewards import RewardWeights, compute_reward

    info = dict(extra_info or {})
    task = str(info.get("task", "mcq"))
    options = info.get("options")
    options = tuple(options) if options is not None and len(options) else None
    weights = RewardWeights.from_config(
        validate(RewardConfig, dict(info.get("reward") or {}), "extra_info.reward")
    )
    answer = info.get("answer", ground_truth)
    prefix = THINK_PREFIX if bool(info.get("think_prefix", True)) else ""
    b = compute_reward(
        with_prefix(prefix, solution_str or ""),
        task=task,
        answer=answer,
        options=options,
        prefix="",
        weights=weights,
        generated=solution_str or "",
    )
    return {"score": float(b.reward), **b.scalars(), "degenerate": bool(b.degenerate)}
