"""Everything a trainer holds on to: policy, processor, codec, optimizer, reference, generator."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch

from paravt.config import ModelConfig
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_policy

_REPLICA_TIMEOUT_S: float = ModelConfig.model_fields["replica_timeout_s"].default  # written once, in config


@dataclass
class PolicySession:
    model: Any
    processor: Any
    codec: ChatCodec
    optimizer: torch.optim.Optimizer
    ref_model: Any | None = None
    generator: Any | None = None  # paravt.models.hf.generator.HFGenerator for RL; None for SFT
    tools: Any | None = None  # paravt.tools.ToolSet

    @classmethod
    def create(cls, path: str, *, lr: float, device: str = "cpu", dtype: str = "float32",
               reference: str | None = None, generate: bool = False, tools: list[str] | None = None,
               tool_server_url: str | None = None, weight_decay: float = 0.0,
               python_weak_isolation: bool = False, prefill_threads: int | None = None,
               replicas: int = 1, replica_timeout_s: float = _REPLICA_TIMEOUT_S) -> PolicySession:
        """The policy at ``path``; ``reference``: where the frozen KL reference comes from (the
        policy the run started from: a copy of the policy when it is ``path``, else loaded once
        from there, e.g. when resuming from a checkpoint)."""
        policy = load_policy(path, device=device, dtype=dtype)
        model = policy.model
        model.train()
        ref = None
        if reference is not None:
            ref = (copy.deepcopy(model) if reference == path
                   else load_policy(reference, device=device, dtype=dtype).model).eval()
            for p in ref.parameters():
                p.requires_grad_(False)
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
        gen = toolset = None
        if generate:
            from paravt.models.hf.replicas import hf_generator
            from paravt.tools import build_toolset

            gen = hf_generator(policy, replicas=replicas, prefill_threads=prefill_threads,
                               replica_timeout_s=replica_timeout_s)
            toolset = build_toolset(tools or ["crop_video"], server_url=tool_server_url,
                                    options={"python": {"weak_isolation": True}} if python_weak_isolation else None)
        return cls(model, policy.processor, ChatCodec(policy.processor), opt, ref, gen, toolset)
