"""Everything a trainer holds on to: policy, processor, codec, optimizer, reference, generator.

Built by ONE builder from the typed config (docs/ARCHITECTURE.md, "Builders"): ``ModelConfig``
(checkpoint, device, dtype, the generator's settings), the trainer's optimiser section (``rl``,
``sft`` or ``prior``:
lr, weight decay, Adam betas) and, for a trainer that rolls out, ``RolloutConfig`` (the tools:
`paravt.agent.backend.open_tools`). The verl engine gets the same optimiser settings
(`paravt.integrations.verl.render.optimiser`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import torch

from paravt.agent.backend import open_tools, policy_generator
from paravt.config import ModelConfig, RolloutConfig, backend_of
from paravt.errors import ConfigError
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_policy

if TYPE_CHECKING:
    from transformers import ProcessorMixin

    from paravt.models.base import Generator
    from paravt.tools import ToolSet


class OptimiserSection(Protocol):
    """What the session reads of a trainer's section (``RLConfig``, ``SFTConfig``,
    ``PriorConfig``)."""

    lr: float
    weight_decay: float
    adam_betas: tuple[float, float]


def adamw(params: Iterable[torch.nn.Parameter], optim: OptimiserSection) -> torch.optim.AdamW:
    """The trainers' optimiser: AdamW with the section's lr, weight decay and betas."""
    b1, b2 = optim.adam_betas
    return torch.optim.AdamW(params, lr=optim.lr, weight_decay=optim.weight_decay, betas=(b1, b2))


@dataclass
class PolicySession:
    model: torch.nn.Module  # a transformers *ForConditionalGeneration
    processor: ProcessorMixin  # Qwen2_5_VLProcessor | Qwen3VLProcessor
    codec: ChatCodec
    optimizer: torch.optim.Optimizer
    ref_model: torch.nn.Module | None = None
    generator: Generator | None = None  # the hf generator for RL; None for SFT
    tools: ToolSet | None = None

    @classmethod
    def create(
        cls,
        model: ModelConfig,
        optim: OptimiserSection,
        *,
        rollout: RolloutConfig | None = None,
        path: str | None = None,
        reference: str | None = None,
    ) -> PolicySession:
        """The policy at ``path`` (default ``model.path``; a checkpoint when resuming) with its
        optimiser from ``optim``; with ``rollout``, a generator and the tools (a trainer that rolls
        out). ``reference``: where the frozen KL reference comes from (the policy the run started
        from: a copy of the policy when it is ``path``, else loaded once from there)."""
        path = model.path if path is None else path
        if model.backend != "hf" or backend_of(path) != "hf":
            raise ConfigError(
                f"training loads a checkpoint (model.backend=hf), not {path!r} with "
                f"model.backend={model.backend!r}; set model.path to a checkpoint directory"
            )
        policy = load_policy(path, device=model.device, dtype=model.dtype)
        policy.model.train()
        ref = None
        if reference is not None:
            ref = (
                copy.deepcopy(policy.model)
                if reference == path
                else load_policy(reference, device=model.device, dtype=model.dtype).model
            ).eval()
            for p in ref.parameters():
                p.requires_grad_(False)
        opt = adamw(policy.model.parameters(), optim)
        gen = toolset = None
        if rollout is not None:
            gen, toolset = policy_generator(policy, model), open_tools(rollout)
        return cls(
            policy.model, policy.processor, ChatCodec(policy.processor), opt, ref, gen, toolset
        )
