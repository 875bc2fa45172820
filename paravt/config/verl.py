"""The ``verl:`` section: resources and engine settings of ``paravt train rl --engine verl``."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from paravt.config.choices import ServeEngine
from paravt.config.fields import _Strict
from paravt.config.limits import _Steps
from paravt.config.tracking import refuse_moved_verl_keys


class VerlConfig(_Strict):
    """Resources and engine settings of ``paravt train rl --engine verl`` (the ``verl:`` section).

    Not PARA-GRPO hyper-parameters (those are ``rl`` / ``sampling`` / ``video``) but what a verl run
    uses: nodes, GPUs, the rollout engine and its memory limits. Plain pydantic: the core never
    imports verl."""

    nnodes: int = Field(1, ge=1, description="Ray nodes (trainer.nnodes).")
    n_gpus_per_node: int = Field(8, ge=1, description="GPUs per node (trainer.n_gpus_per_node).")
    rollout_backend: ServeEngine = Field(
        "vllm", description="Rollout engine (actor_rollout_ref.rollout.name)."
    )
    tensor_parallel_size: int = Field(
        1, ge=1, description="Tensor parallel size of each rollout replica."
    )
    gpu_memory_utilization: float = Field(
        0.6,
        gt=0,
        le=1,
        description="Share of GPU memory the rollout engine may take (KV cache + weights).",
    )
    max_num_batched_tokens: int = Field(
        16384,
        ge=256,
        description="Tokens per engine step; must exceed the longest single prompt (video "
        "prompts are long).",
    )
    max_num_seqs: int = Field(256, ge=1, description="Concurrent sequences per rollout replica.")
    prompt_length: int = Field(
        8192,
        ge=64,
        description="Max prompt tokens of a trajectory row (overview video tokens included).",
    )
    response_length: int = Field(
        8192, ge=64, description="Max response tokens of a row (all main turns + tool responses)."
    )
    train_batch_size: int = Field(
        32,
        ge=1,
        description="Prompts per step (data.train_batch_size); each gets rl.group_size rollouts.",
    )
    ppo_mini_batch_size: int = Field(
        8, ge=1, description="Prompts per PPO mini-batch (actor.ppo_mini_batch_size)."
    )
    micro_batch_size_per_gpu: int = Field(
        1, ge=1, description="Rows per GPU per forward/backward (actor + log-prob passes)."
    )
    use_dynamic_bsz: bool = Field(
        True, description="Pack rows by token count (actor.use_dynamic_bsz)."
    )
    max_token_len_per_gpu: int = Field(
        32768, ge=1024, description="Token budget per GPU with dynamic batch size."
    )
    param_offload: bool = Field(False, description="FSDP parameter offload to CPU.")
    optimizer_offload: bool = Field(False, description="FSDP optimizer-state offload to CPU.")
    gradient_checkpointing: bool = Field(True, description="Activation checkpointing in the actor.")
    agent_workers: int = Field(
        8, ge=1, description="Agent-loop workers (rollout.agent.num_workers)."
    )
    total_epochs: _Steps = Field(
        1, ge=1, description="Passes over the training parquet (trainer.total_epochs)."
    )
    val_data: str | None = Field(
        None, description="Validation parquet in verl's layout (None: no validation)."
    )
    save_freq: int = Field(10, description="Checkpoint every N steps (-1: never).")
    steps_per_epoch: int = Field(
        1,
        ge=1,
        description="Steps per data epoch: the gating epoch is (global_step - 1) // "
        "steps_per_epoch; launch_verl fills it from the parquet size.",
    )
    extra_overrides: list[str] = Field(
        default_factory=list,
        description="Raw Hydra overrides appended to the command (escape hatch).",
    )

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        return refuse_moved_verl_keys(data)  # verl.loggers → logging.loggers, …
