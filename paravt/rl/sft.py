"""SFT cold start on parallel tool traces (main-agent and sub-agent rows).

Sequences are built exactly as an episode builds its trajectory (DESIGN §3): prompt messages via
``ChatCodec.encode_message`` (mask 0), then for each assistant turn the generation prompt (mask 0),
the WHOLE response, ``<think>`` included, + ``<|im_end|>`` (mask 1) and the closing newline
(mask 0); tool responses are context (mask 0). SFT teaches the format the think prefix later
constrains: the prefix is an RL-time constraint ("reinforces what SFT has already taught"), so a
model sampled without it must still open ``<think>`` itself. ``sft.mask_think_prefix`` (off by
default) puts the ``<think>\\n`` into the prompt instead, as a forced prefix — for experiments only. Frames come from the same decoder and sampling
recipe as at rollout, through ``paravt.data`` (``to_chat_messages``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from paravt.agent.trajectory import Trajectory, TrajectoryBuilder
from paravt.models.base import ChatMessage
from paravt.models.chat import ChatCodec
from paravt.protocol.tags import THINK_PREFIX
from paravt.rl.update import trajectory_logprobs


def build_sequence(messages: Sequence[ChatMessage], codec: ChatCodec, *, mask_think_prefix: bool = False,
                   row_id: str = "") -> Trajectory:
    """The training sequence of one trace; assistant responses carry loss mask 1 (with
    ``mask_think_prefix`` their leading ``<think>\\n`` is context, mask 0)."""
    b = TrajectoryBuilder(row_id, "main", 0)
    for m in messages:
        if m.role != "assistant":
            enc = codec.encode_message(m)
            b.add_context(enc.ids, enc.videos, enc.images)
            continue
        prefix = THINK_PREFIX if mask_think_prefix and m.content.startswith(THINK_PREFIX) else ""
        b.add_context(codec.generation_prompt(prefix))
        body = codec.encode_text(m.content[len(prefix):]) + (codec.im_end_id,)
        b.add_sampled(body, [0.0] * len(body))
        b.add_context(codec.close_turn(body))
    return b.freeze("answer")


@dataclass
class SFTTrainer:
    examples: list[Trajectory]
    model: Any
    processor: Any
    optimizer: torch.optim.Optimizer
    batch_size: int
    max_grad_norm: float
    seed: int = 0

    def batch(self, step: int) -> list[Trajectory]:
        """Deterministic batches: a seeded permutation per epoch, indexed by step."""
        n = len(self.examples)
        out = []
        for j in range(step * self.batch_size, (step + 1) * self.batch_size):
            epoch, pos = divmod(j, n)
            perm = list(range(n))
            random.Random(f"sft:{self.seed}:{epoch}").shuffle(perm)
            out.append(self.examples[perm[pos]])
        return out

    def step(self, step: int) -> dict[str, float]:
        batch = [t for t in self.batch(step) if t.n_sampled > 0]
        total = sum(t.n_sampled for t in batch)
        self.optimizer.zero_grad(set_to_none=True)
        nll_sum = 0.0
        for traj in batch:
            lp = trajectory_logprobs(self.model, self.processor, traj)  # (P,)
            loss = -lp.sum() / total  # token-mean over the whole batch
            loss.backward()
            nll_sum += float(loss.detach())
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm))
        skipped = not (torch.isfinite(torch.tensor(nll_sum)) and torch.isfinite(torch.tensor(grad_norm)))
        if skipped:
            self.optimizer.zero_grad(set_to_none=True)
        else:
            self.optimizer.step()
        return {"loss": nll_sum, "grad_norm": grad_norm, "tokens/trained": float(total),
                "update_skipped": float(skipped), "lr": self.optimizer.param_groups[0]["lr"]}


def load_examples(path: Path, root: Path | None, codec: ChatCodec, *, include_sub: bool, max_pixels: int,
                  crop_max_pixels: int, size_factor: int, mask_think_prefix: bool = False) -> list[Trajectory]:
    """Every SFT row of a parquet file as a training sequence."""
    from paravt.data.chat import to_chat_messages
    from paravt.data.schema import read_rows

    root = Path(root) if root else Path(path).parent
    out = []
    for row in read_rows(path):
        if getattr(row, "kind", "main") == "rl" or (row.kind == "sub" and not include_sub):
            continue
        mp = crop_max_pixels if row.kind == "sub" else max_pixels
        msgs = to_chat_messages(row, root, max_pixels=mp, size_factor=size_factor)
        out.append(build_sequence(msgs, codec, mask_think_prefix=mask_think_prefix and row.kind == "main",
                                  row_id=row.id))
    return out
