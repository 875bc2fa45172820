"""Padded micro-batches of training sequences WITH their media: one forward scores many rows.

Every training pass (SFT, the prior, the GRPO update and its reference pass) scores the sampled
(loss-mask 1) tokens of many trajectories. Rows are RIGHT-padded (``media.batch_inputs``), and the
forward gets NO attention mask: with pads only after a row's last real token, the causal mask
alone already keeps every real token from seeing a pad, and a real token's M-RoPE position
depends only on the tokens before it, so the real tokens' outputs are those of the unpadded row
while attention runs on the fast causal kernel (no B×L×L mask; no query row is ever fully masked).
Pad positions compute garbage that nothing reads (they are never scored, and later positions do
not feed earlier ones). The rows' media are concatenated in row order (``pixel_values_videos`` /
``video_grid_thw``, images alike), as Qwen-VL models take them, and ``mm_token_type_ids`` is always
passed: Qwen2.5-VL and Qwen3-VL compute each row's M-RoPE positions from its ids and grids. Only the
scored positions go through the LM head. The batched logprobs equal per-sequence forwards within
float tolerance (tests/rl/test_batched_passes.py). Given the model, each row's M-RoPE positions are
computed once (``paravt.rl.rope``) and passed as ``position_ids``, so no forward recomputes them.

Micro-batches are bounded by a token budget counted in PADDED tokens (rows × longest row: what a
forward costs): rows are taken longest first and added while the padded size stays within the
budget and pads stay under ``MAX_PAD_SHARE`` of it; a row longer than the budget goes alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from paravt.agent.trajectory import Trajectory
from paravt.config import SFTConfig
from paravt.errors import ConfigError
from paravt.models.chat import VISION_TOKENS
from paravt.models.media import batch_inputs, sampling_log_softmax
from paravt.rl.loss import token_entropy
from paravt.rl.rope import batch_positions

DEFAULT_MICRO_BATCH_TOKENS: int = SFTConfig.model_fields[
    "micro_batch_tokens"
].default  # written once, in config
MAX_PAD_SHARE = (
    0.1  # most padding a micro-batch may hold, as a share of its padded tokens: a pad costs
)
# a real token's compute (docs/performance-log.md, "Batched training passes": the loaded runs
# there do not separate 10% from 25%)


@dataclass(frozen=True)
class MicroBatch:
    """Forward inputs of some rows and where their scored (loss-mask 1) tokens sit."""

    rows: tuple[int, ...]  # indices into the planned sequence list, in batch-row order
    inputs: Mapping[
        str, torch.Tensor
    ]  # B×L right-padded ids / masks + the rows' media, concatenated
    token_row: (
        torch.Tensor
    )  # (N,) batch row of each scored token, rows in order, positions ascending
    token_pos: torch.Tensor  # (N,) its position t in the row (predicted from the logits at t − 1)
    counts: tuple[int, ...]  # scored tokens per row (sums to N)

    def split(self, values: torch.Tensor) -> list[torch.Tensor]:
        """(N,) per-token values → one tensor per row, in ``rows`` order."""
        return list(values.split(list(self.counts)))


@dataclass(frozen=True)
class TokenScores:
    """One forward's scores at the scored tokens, under the sampling distribution."""

    logprobs: torch.Tensor  # (N,) log p(token t | prefix); differentiable when the forward was
    entropy: (
        torch.Tensor | None
    )  # (N,) entropy of that distribution at each position (no grad); None unless asked
    # (N,) 1.0 where the distribution's most likely token is the scored one (no grad); None
    # unless asked (``entropy=True`` computes both)
    correct: torch.Tensor | None = None


def sampled_positions(traj: Trajectory) -> list[int]:
    """Indices t of tokens the policy sampled (loss mask 1); t ≥ 1 always (a prompt precedes)."""
    return [t for t, m in enumerate(traj.loss_mask) if m]


def vision_ids(processor: Any) -> tuple[int, ...]:
    """Vision placeholder ids (the generator never samples them): the codec's one list."""
    return tuple(processor.tokenizer.convert_tokens_to_ids(t) for t in VISION_TOKENS)


def plan(
    lengths: Sequence[int], token_budget: int, max_pad_share: float | None = None
) -> list[list[int]]:
    """Group indices of sequences with these lengths into micro-batches: longest first, a row joins
    the open group while rows × longest row ≤ ``token_budget`` (a longer single row goes alone) and
    pads stay ≤ ``max_pad_share`` (default ``MAX_PAD_SHARE``) of the group's padded tokens (the
    passes are compute-bound on a CPU: a padded token costs what a real one does)."""
    if token_budget < 1:
        raise ConfigError(
            f"micro_batch_tokens={token_budget} must be >= 1; set it to the padded tokens one "
            f"forward may hold (default {DEFAULT_MICRO_BATCH_TOKENS})"
        )
    share = MAX_PAD_SHARE if max_pad_share is None else max_pad_share
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    groups: list[list[int]] = []
    for i in order:
        padded = (len(groups[-1]) + 1) * lengths[groups[-1][0]] if groups else 0
        real = sum(lengths[j] for j in groups[-1]) + lengths[i] if groups else 0
        if groups and padded <= token_budget and padded - real <= share * padded:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def micro_batches(
    processor: Any,
    trajs: Sequence[Trajectory],
    token_budget: int,
    device: str | torch.device = "cpu",
    *,
    model: Any | None = None,
) -> list[MicroBatch]:
    """The trajectories as right-padded micro-batches within ``token_budget`` padded tokens.
    ``model``: its rope index gives each micro-batch its ``position_ids``, computed once per row on
    the CPU (``paravt.rl.rope``); None leaves them to every forward."""
    pad = processor.tokenizer.pad_token_id or 0
    out = []
    for rows in plan([len(t.ids) for t in trajs], token_budget):
        seqs = [(trajs[r].ids, trajs[r].videos, trajs[r].images) for r in rows]
        inputs = batch_inputs(processor, seqs, pad_id=pad, device="cpu", padding_side="right")
        if model is not None:
            pos = batch_positions(
                model, processor, [trajs[r] for r in rows], inputs["input_ids"].shape[1], inputs
            )
            if pos is not None:
                inputs["position_ids"] = pos  # 3×B×L
        inputs = {k: v.to(device) for k, v in inputs.items()}
        positions = [sampled_positions(trajs[r]) for r in rows]
        token_row = torch.tensor(
            [b for b, ps in enumerate(positions) for _ in ps], dtype=torch.long
        )  # (N,)
        token_pos = torch.tensor([t for ps in positions for t in ps], dtype=torch.long)  # (N,)
        out.append(
            MicroBatch(
                tuple(rows),
                inputs,
                token_row.to(device),
                token_pos.to(device),
                tuple(len(ps) for ps in positions),
            )
        )
    return out


def score(
    model: Any,
    mb: MicroBatch,
    *,
    temperature: float = 1.0,
    suppress_ids: Sequence[int] = (),
    entropy: bool = False,
) -> TokenScores:
    """One forward of ``model`` on the micro-batch: logprobs of its scored tokens under
    ``softmax(logits / temperature)`` without ``suppress_ids`` (``media.sampling_log_softmax``,
    the formula the per-sequence path uses); gradients flow outside ``torch.no_grad``."""
    inputs = {
        k: v for k, v in mb.inputs.items() if k != "attention_mask"
    }  # causal already hides right pads
    hidden = model.model(**inputs, use_cache=False).last_hidden_state  # B×L×H
    logits = model.lm_head(
        hidden[mb.token_row, mb.token_pos - 1]
    )  # N×V: token t is predicted at t − 1
    logp = sampling_log_softmax(logits, temperature=temperature, suppress_ids=suppress_ids)  # N×V
    target = mb.inputs["input_ids"][mb.token_row, mb.token_pos]  # (N,)
    ent = hit = None
    if entropy:
        with torch.no_grad():
            ent = token_entropy(logp.detach())  # (N,)
            hit = (logp.detach().argmax(-1) == target).to(logp.dtype)  # (N,)
    return TokenScores(logp.gather(-1, target[:, None])[:, 0], ent, hit)


def sampling_logprobs(
    trajs: Sequence[Trajectory], mb: MicroBatch, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    """The generator's logprobs of the micro-batch's scored tokens (N,), in its token order."""
    vals = [trajs[r].logprobs[t] for r in mb.rows for t in sampled_positions(trajs[r])]
    return torch.tensor(vals, dtype=dtype, device=device)
