"""Shared prefill: rows of one ``generate`` batch with an identical prompt run ONE prefill.

The G rollouts of a GRPO group (and any other requests whose prompt token ids AND media content
are identical, ``share_plan``) would otherwise each re-run the vision tower and re-prefill the same
prompt. The batch is reduced to its distinct prompts; those are prefilled once (all tokens but the
last, so that ``model.generate`` still has one token to feed, ``prefill_rows``), the KV cache is
expanded along the batch dimension to one row per request (``DynamicCache.batch_select_indices``
with repeated indices, or ``assemble`` from per-row caches) and ``generate`` continues from it
for every row with the existing per-row sampler (orchestrated by ``paravt.models.hf.prefill``).

Positions: Qwen-VL uses 3-D (m)RoPE positions whose text part is shifted by the media
(``rope_deltas``). ``generate`` computes them once from the full prompt and appends ``last + 1``
per new token. ``prompt_positions`` computes them with the model's own
``_prepare_position_ids_for_generation`` (transformers 5.10: a 4×B×L tensor, text + 3 rope axes)
on the distinct rows; they are indexed out to all rows and handed to ``generate`` as
``position_ids``, so the decode positions are exactly the ones the unshared path uses; the prefix
forward gets the same positions' first L-1 columns.

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
        digest = hashlib.blake2b(np.ascontiguousarray(frames.array).data, digest_size=16).digest()
        memo[key] = (frames.array.shape, frames.timestamps, digest)
    return memo[key]


def share_plan(
    requests: Sequence[GenRequest],
    media: Sequence[tuple[tuple[Any, ...], tuple[Any, ...]]] | None = None,
) -> tuple[list[int], list[int]] | None:
    """(first row of each distinct prompt, index of each row's distinct prompt), or None when no
    two rows share their prompt (token ids and media). ``media``: the rows' ``media_key`` when the
    caller has them already (the frames are then not hashed again)."""
    if media is None:
        memo: dict[int, tuple[Any, ...]] = {}
        media = [media_key(r, memo) for r in requests]
    seen: dict[tuple[Any, ...], int] = {}
    firsts: list[int] = []
    index: list[int] = []
    for row, (r, m) in enumerate(zip(requests, media, strict=True)):
        key = (r.prompt_ids, *m)
        if key not in seen:
            seen[key] = len(firsts)
            firsts.append(row)
        index.append(seen[key])
    return (firsts, index) if len(firsts) < len(requests) else None


def media_key(
    req: GenRequest, memo: dict[int, tuple[Any, ...]]
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Content keys of a request's (videos, images)."""
    return (
        tuple(_media_digest(v, memo) for v in req.videos),
        tuple(_media_digest(im, memo) for im in req.images),
    )


RowKV = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: (keys, values), each 1×H×T×D


def row_kv(cache: Any, row: int, start: int, stop: int) -> RowKV:
    """Columns [start, stop) of one row of a cache, per layer."""
    return [
        (layer.keys[row : row + 1, :, start:stop], layer.values[row : row + 1, :, start:stop])
        for layer in cache.layers
    ]


def plain_layers(cache: Any) -> bool:
    """True when every layer is a plain ``DynamicLayer`` (no sliding window): rows can be cut out
    and re-padded."""
    from transformers.cache_utils import DynamicLayer

    return all(type(layer) is DynamicLayer for layer in cache.layers)


def assemble(model: Any, rows: Sequence[RowKV], width: int) -> Any:
    """One left-padded ``DynamicCache`` of ``width`` columns from per-row caches (pad columns are
    zeros; the attention mask hides them, as it hides a left-padded row's pad tokens)."""
    from transformers.cache_utils import DynamicCache

    cache = DynamicCache(config=model.config)
    for li in range(len(rows[0])):
        k0 = rows[0][li][0]
        keys = k0.new_zeros((len(rows), k0.shape[1], width, k0.shape[3]))  # B×H×W×D
        values = rows[0][li][1].new_zeros(
            (len(rows), rows[0][li][1].shape[1], width, rows[0][li][1].shape[3])
        )
        for b, kv in enumerate(rows):
            n = kv[li][0].shape[2]
            keys[b, :, width - n :] = kv[li][0][0]
            values[b, :, width - n :] = kv[li][1][0]
        cache.update(keys, values, li)
    return cache


def prompt_positions(model: Any, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """The position ids ``generate`` itself computes for these prompts (4×U×L for Qwen-VL: text +
    3 mRoPE axes; U×L for a text model). Private transformers API, pinned < 5.11."""
    return model._prepare_position_ids_for_generation(inputs["input_ids"], {**inputs})


def position_cols(positions: torch.Tensor, rows: torch.Tensor | slice, cols: slice) -> torch.Tensor:
    return positions[:, rows, cols] if positions.dim() == 3 else positions[rows, cols]


@torch.no_grad()
def prefill_rows(
    model: Any, inputs: dict[str, torch.Tensor], positions: torch.Tensor
) -> tuple[Any, list[int]]:
    """Prefill all tokens but the last of left-padded prompts; (cache, prompt lengths)."""
    ids, mask, mm = (inputs[k] for k in _TEXT_KEYS)  # U×L each
    media = {k: v for k, v in inputs.items() if k not in _TEXT_KEYS}
    out = model(
        input_ids=ids[:, :-1],
        attention_mask=mask[:, :-1],
        mm_token_type_ids=mm[:, :-1],
        position_ids=position_cols(positions, slice(None), slice(None, -1)),
        use_cache=True,
        logits_to_keep=1,
        **media,
    )
    return out.past_key_values, [int(x) for x in mask.sum(-1).tolist()]


def generate_kwargs(
    inputs: dict[str, torch.Tensor], positions: torch.Tensor, index: Sequence[int], cache: Any
) -> dict[str, Any]:
    """``generate`` keyword arguments for all rows (row i = distinct prompt ``index[i]``)."""
    ids, mask, mm = (inputs[k] for k in _TEXT_KEYS)
    rows = torch.tensor(list(index), dtype=torch.long, device=ids.device)  # B
    return {
        "input_ids": ids[rows],
        "attention_mask": mask[rows],
        "mm_token_type_ids": mm[rows],
        "position_ids": positions.index_select(positions.dim() - 2, rows),
        "past_key_values": cache,
    }
