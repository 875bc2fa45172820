"""Cluster and engine knobs of a verl run (the ``verl:`` section of a training YAML).

They are not PARA-GRPO hyper-parameters (those live in ``TrainConfig.rl`` / ``sampling`` /
``video``) but the resources a run uses: nodes, GPUs, the rollout engine and its memory limits.
Until ``TrainConfig`` carries a ``verl`` field, ``load_with_verl`` reads this section from the same
YAML before validating the rest with ``paravt.config``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from paravt.config import TrainConfig, apply_override, validate
from paravt.errors import ConfigError


class VerlSettings(BaseModel):
    """Resources and engine settings of ``paravt train rl --engine verl``."""

    model_config = ConfigDict(extra="forbid")

    nnodes: int = Field(1, ge=1, description="Ray nodes (trainer.nnodes).")
    n_gpus_per_node: int = Field(8, ge=1, description="GPUs per node (trainer.n_gpus_per_node).")
    rollout_backend: Literal["vllm", "sglang"] = Field("vllm", description="Rollout engine (actor_rollout_ref.rollout.name).")
    tensor_parallel_size: int = Field(1, ge=1, description="Tensor parallel size of each rollout replica.")
    gpu_memory_utilization: float = Field(0.6, gt=0, le=1, description="Share of GPU memory the rollout engine may take (KV cache + weights).")
    max_num_batched_tokens: int = Field(16384, ge=256, description="Tokens per engine step; must exceed the longest single prompt (video prompts are long).")
    max_num_seqs: int = Field(256, ge=1, description="Concurrent sequences per rollout replica.")
    prompt_length: int = Field(8192, ge=64, description="Max prompt tokens of a trajectory row (overview video tokens included).")
    response_length: int = Field(8192, ge=64, description="Max response tokens of a row (all main turns + tool responses).")
    train_batch_size: int = Field(32, ge=1, description="Prompts per step (data.train_batch_size); each gets rl.group_size rollouts.")
    ppo_mini_batch_size: int = Field(8, ge=1, description="Prompts per PPO mini-batch (actor.ppo_mini_batch_size).")
    micro_batch_size_per_gpu: int = Field(1, ge=1, description="Rows per GPU per forward/backward (actor + log-prob passes).")
    use_dynamic_bsz: bool = Field(True, description="Pack rows by token count (actor.use_dynamic_bsz).")
    max_token_len_per_gpu: int = Field(32768, ge=1024, description="Token budget per GPU with dynamic batch size.")
    param_offload: bool = Field(False, description="FSDP parameter offload to CPU.")
    optimizer_offload: bool = Field(False, description="FSDP optimizer-state offload to CPU.")
    gradient_checkpointing: bool = Field(True, description="Activation checkpointing in the actor.")
    agent_workers: int = Field(8, ge=1, description="Agent-loop workers (rollout.agent.num_workers).")
    total_epochs: int = Field(1, ge=1)
    val_data: str | None = Field(None, description="Validation parquet in verl's layout (None: no validation).")
    project_name: str = "paravt"
    experiment_name: str = "paragrpo"
    loggers: list[str] = Field(default_factory=lambda: ["console"], description="trainer.logger (console, wandb, tensorboard).")
    save_freq: int = Field(10, description="Checkpoint every N steps (-1: never).")
    steps_per_epoch: int = Field(1, ge=1, description="Steps per data epoch: the gating epoch is (global_step - 1) // steps_per_epoch; launch_verl fills it from the parquet size.")
    extra_overrides: list[str] = Field(default_factory=list, description="Raw Hydra overrides appended to the command (escape hatch).")


def verl_settings_of(cfg: TrainConfig) -> VerlSettings:
    """The ``verl`` section of ``cfg`` once TrainConfig has one, else the defaults."""
    section = getattr(cfg, "verl", None)
    if section is None:
        return VerlSettings()
    if isinstance(section, VerlSettings):
        return section
    data = section.model_dump() if isinstance(section, BaseModel) else dict(section)
    return validate(VerlSettings, data, "verl")


def load_with_verl(path: str | Path, overrides: list[str] | None = None) -> tuple[TrainConfig, VerlSettings]:
    """Load a training YAML whose optional ``verl:`` section holds ``VerlSettings``.

    Overrides ``verl.x=...`` go to the section, everything else to the TrainConfig.
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {p} does not exist; pass an existing YAML file (see configs/)")
    data: dict[str, Any] = yaml.safe_load(p.read_text()) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {p} must hold a mapping at the top level")
    for item in overrides or []:
        apply_override(data, item)
    section = data.pop("verl", None) or {}
    if "verl" in TrainConfig.model_fields:
        cfg = validate(TrainConfig, {**data, "verl": section}, str(p))
        return cfg, verl_settings_of(cfg)
    return validate(TrainConfig, data, str(p)), validate(VerlSettings, section, f"{p}: verl")
