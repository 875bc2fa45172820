"""The model card (``README.md``) of every model directory a trainer saves (each checkpoint's
``model/`` and the final ``OUT/model``): the base model (also ``base_model`` in the metadata
header, as the Hugging Face Hub reads it), the data, the command that made it, the
step, its last logged metrics and the settings that differ from the defaults (the full settings are
``paravt_config.yaml`` beside it)."""

from __future__ import annotations

import json
import math
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from paravt.config import TrainConfig

CARD = "README.md"
#: The headline metrics of the card, when the step logged them.
HEADLINE = (
    "actor/loss",
    "train/loss",
    "critic/rewards/mean",
    "acc",
    "f_tau",
    "kappa",
    "actor/kl_loss",
    "actor/grad_norm",
    "train/grad_norm",
    "actor/lr",
    "train/lr",
    "mean_token_accuracy",
    "perf/cumulative_tokens",
)


def write_model_card(
    model_dir: Path, cfg: TrainConfig, *, kind: str, step: int, metrics: Mapping[str, Any]
) -> Path:
    base = cfg.init_from or cfg.model.path
    changed = _changed(cfg.model_dump(mode="json"), TrainConfig().model_dump(mode="json"))
    lines = [
        "---",
        f"base_model: {json.dumps(str(base))}",  # a YAML string (JSON's quoting is YAML's too)
        "library_name: transformers",
        "pipeline_tag: image-text-to-text",
        "tags: [paravt, video, agentic-rl]",
        "---",
        "",
        f"# {Path(cfg.out_dir).name}: paravt {kind} at step {step}",
        "",
        f"- base model: `{base}`",
        f"- data: `{cfg.data}`" + (f" (root `{cfg.data_root}`)" if cfg.data_root else ""),
        f"- trainer: `paravt train {kind}`, step {step} of the run in `{cfg.out_dir}`",
        f"- command: `{' '.join(shlex.quote(a) for a in sys.argv)}`",
        "- settings: `paravt_config.yaml` in this directory (infer and eval read it)",
        "",
        "## Metrics of the step",
        "",
        "| metric | value |",
        "|---|---|",
        *(f"| {k} | {_fmt(metrics[k])} |" for k in HEADLINE if k in metrics),
        "",
        "## Settings that differ from the defaults",
        "",
        *([f"- `{k}`: `{v}`" for k, v in changed] or ["- none"]),
        "",
    ]
    path = model_dir / CARD
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _changed(value: Any, default: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, Mapping) and isinstance(default, Mapping):
        out = []
        for k, v in value.items():
            out += _changed(v, default.get(k), f"{prefix}{k}.")
        return out
    return [] if value == default else [(prefix.rstrip("."), value)]


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}" if math.isfinite(v) else str(v)
    return str(v)
