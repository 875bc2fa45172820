"""A TrainConfig whose every field of the builders' sections differs from its default (issue 32):
``model`` and ``rollout`` (the backend builder, paravt.agent.backend) and the optimiser fields of
``rl``, ``sft`` and ``prior`` (the session builder, paravt.rl.session). The builder and caller
tests follow each of these values to where it lands; `check_changed` fails when a section gains a
field this table does not change, so a new field cannot go untested."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paravt.config import ModelConfig, RolloutConfig, TrainConfig

URL = "http://127.0.0.1:9/v1"  # nothing listens there: the tests stop before a request

MODEL: dict[str, Any] = {
    "path": URL,
    "backend": "openai",
    "device": "cpu:0",
    "dtype": "bfloat16",
    "served_model_name": "served-x",
    "request_timeout_s": 7.5,
    "max_retries": 5,
    "max_concurrency": 3,
    "api_key_file": "KEY",
    "prefill_threads": 2,
    "replicas": 2,
    "replica_timeout_s": 77.0,
    "continuous_batching": False,
}
ROLLOUT: dict[str, Any] = {
    "mode": "sequential",
    "k_max": 3,
    "max_turns": 2,
    "min_window_s": 2.0,
    "max_context_tokens": 5000,
    "think_prefix": False,
    "call_forms": "per_call",
    "turn_rules": "paravt",
    "train_subagents": True,
    "subagent_timeout_s": 12.0,
    "subagent_prompt": "question",
    "tools": ["crop_video", "frame_select"],
    "tool_server_url": "http://127.0.0.1:9",
    "tool_server_key_file": "KEY",
    "python_weak_isolation": True,
    "prompt_version": "v1",  # a version the config accepts, not the default v2
}
OPTIM: dict[str, dict[str, Any]] = {
    "rl": {"lr": 3e-6, "weight_decay": 0.05, "adam_betas": (0.8, 0.95)},
    "sft": {"lr": 2e-3, "weight_decay": 0.02, "adam_betas": (0.85, 0.98)},
    "prior": {"lr": 4e-3, "weight_decay": 0.03, "adam_betas": (0.7, 0.9)},
}
KEY = "k" * 24  # the key in the key files


def changed_config(tmp_path: Path) -> TrainConfig:
    """The config (key files written under ``tmp_path``; out_dir there too)."""
    key = tmp_path / "key"
    key.write_text(KEY + "\n")
    model = {k: str(key) if v == "KEY" else v for k, v in MODEL.items()}
    rollout = {k: str(key) if v == "KEY" else v for k, v in ROLLOUT.items()}
    return TrainConfig.model_validate(
        {
            "out_dir": str(tmp_path / "run"),
            "model": model,
            "rollout": rollout,
            **{s: dict(v) for s, v in OPTIM.items()},
        }
    )


def check_changed() -> list[str]:
    """Fields of the builders' sections this table leaves out or leaves at their defaults."""
    out = [f"model.{k}" for k in ModelConfig.model_fields if k not in MODEL]
    out += [f"rollout.{k}" for k in RolloutConfig.model_fields if k not in ROLLOUT]
    defaults = TrainConfig()
    for name, values in (("model", MODEL), ("rollout", ROLLOUT), *OPTIM.items()):
        section = getattr(defaults, name)
        out += [
            f"{name}.{k} keeps its default" for k, v in values.items() if getattr(section, k) == v
        ]
    return out
