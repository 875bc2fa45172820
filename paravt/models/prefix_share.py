"""Shared prefill: rows of one ``generate`` batch with an identical prompt run ONE prefill.

The G rollouts of a GRPO group (and any other requests whose prompt token ids AND media are
identical) would otherwise each re-run the vision tower and re-prefill the same prompt. Here the
batch is reduced to its distinct prompts; those are prefilled once (all tokens but the last, so
that ``model.generate`` still has one token to feed), the KV cache is expanded along the batch
dimension to one row per request (``DynamicCache.batch_select_indices`` with repeated indices),
and ``generate`` continues from it for every row with the existing per-row sampler.

Positions: Qwen-VL uses 3-D (m)RoPE positions whose text part is shifted by the media
(``rope_deltas``). ``generate`` computes them once from the full prompt and appends ``last + 1``
per new token. We compute them with the model's own ``_prepare_position_ids_for_generation``
(transformers 5.10: a 4×B×L tensor, text + 3 rope axes) on the distinct rows, index them out to
all rows and hand them to ``generate`` as ``position_ids``, so the decode positions are exactly the
ones the unshared path uses; the prefix forward gets the same positions' first L-1 columns.

Exactness: identical rows of a left-padded batch are identical inputs, so the only difference
to the unshared path is float rounding of a different batch shape (tested: same tokens, logprobs
within 1e-4). Not shared: a prompt whose last token is a media placeholder (never the case for a
chat prompt ending in the generation prompt), and batches without a repeated prompt.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from paravt.models.base import GenRequest
from paravt.video.types import Frames

_TEXT_KEYS = ("input_ids", "attention_mask", "mm_token_type_ids")


def _media_digest(frames: Frames, memo: dict[int, tuple[Any, ...]]) -> tuple[Any, ...]:
    """Content fingerprint of a media item (shape, timestamps, hash of the pixels); memoised by
    object id within one batch so that G references to the same frames are hashed once."""
    key = id(frames)
    if key not in memo:
        digest = hashlib.blake2b(np.ascontiguousarray(frames.array), digest_size=16).digest()
        memo[key] = (frames.array.shape, frames.timestamps, digest)
    return memo[key]


def share_plan(requests: Sequence[GenRequest]) -> tuple[list[int], list[int]] | None:
    """(first row of each distinct prompt, index of each row's distinct prompt), or None when no
    two rows share their prompt (token ids and media)."""
    memo: dict[int, tuple[Any, ...]] = {}
    seen: dict[tuple[Any, ...], int] = {}
    firsts: list[int] = []
    index: list[int] = []
    for row, r in enumerate(requests):
        key = (r.prompt_ids, tuple(_media_digest(v, memo) for v in r.videos),
               tuple(_media_digest(im, memo) for im in r.images))
        if key not in seen:
            seen[key] = len(firsts)
            firsts.append(row)
        index.append(seen[key])
    return (firsts, index) if len(firsts) < len(requests) else None


@torch.no_grad()
def shared_prefill(model: Any, inputs: dict[str, torch.Tensor], index: Sequence[int]) -> dict[str, torch.Tensor] | None:
    """Prefill the distinct rows ``inputs`` (from ``batch_inputs``) once and return the
    ``generate`` keyword arguments for ALL rows (row i = distinct row ``index[i]``): input ids,
    attention mask, mm token types, 3-D position ids and the expanded cache. None when the
    prompts end on a media placeholder (the last token must be text)."""
    ids, mask, mm = (inputs[k] for k in _TEXT_KEYS)  # U×L each
    if ids.shape[1] < 2 or bool((mm[:, -1] != 0).any()):
        return None
    media = {k: v for k, v in inputs.items() if k not in _TEXT_KEYS}
    # private transformers API (pinned < 5.11): the positions generate() itself would use
    positions = model._prepare_position_ids_for_generation(ids, {**inputs})  # 4×U×L (Qwen-VL) or U×L
    out = model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], mm_token_type_ids=mm[:, :-1],
                position_ids=positions[..., :-1], use_cache=True, logits_to_keep=1, **media)
    cache = out.past_key_values
    rows = torch.tensor(list(index), dtype=torch.long, device=ids.device)  # B
    cache.batch_select_indices(rows)  # U rows → B rows (a copy per row)
    base = getattr(model, "model", None)
    if getattr(base, "rope_deltas", None) is not None:  # keep the model's cached state B-rowed
        base.rope_deltas = base.rope_deltas[rows]
    return {"input_ids": ids[rows], "attention_mask": mask[rows], "mm_token_type_ids": mm[rows],
            "position_ids": positions.index_select(positions.dim() - 2, rows), "past_key_values": cache}
