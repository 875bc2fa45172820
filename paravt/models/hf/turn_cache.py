"""KV cache kept across an agent's turns (hf backend): the next turn prefills only its new tokens.

After a batch, each row's cache (its prompt and its sampled tokens but the last, which was never
fed) is kept in a small LRU keyed by those token ids and the content keys of its media. A later
request whose prompt STARTS with an entry's ids (the trajectory is built by appending, so the next
main turn does: prompt + sampled + close + tool response + generation prompt) and whose first
media are the entry's media continues from that cache: only the new tokens (and the vision tower
on the new media only) are run. The entry is consumed (its continuation is stored instead).

Positions: the new tokens get the positions ``generate`` computes for the WHOLE prompt (they do
not depend on how it was left-padded), so the cached and the new columns agree with a full
prefill; the cached keys were rotated with those same positions when they were computed.

Weights: the cache records ``weights_version`` (the parameters' version counters and storage
addresses); an update through autograd-visible in-place ops (the default torch optimizers, a
``load_state_dict``) or a replaced parameter (``param.data = ...``,
``load_state_dict(assign=True)``, ``.to()``) changes it and drops every entry, so a cache is never
reused across a policy update.
Not seen: writes through ``param.data`` in place and fused optimizers (``AdamW(fused=True)``),
which bypass the counters; the trainers here use neither.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from paravt.models.base import GenRequest
from paravt.models.hf.prefix_share import RowKV, position_cols, row_kv
from paravt.models.media import batch_inputs

MediaKey = tuple[tuple[Any, ...], tuple[Any, ...]]


def weights_version(model: Any) -> tuple[int, int]:
    """(sum of the version counters, hash of the storage addresses) over every parameter (a trainer
    may freeze some, e.g. the vision tower, and update the rest); see the module docstring for
    which updates change it."""
    params = list(model.parameters())
    return sum(int(p._version) for p in params), hash(tuple(p.data_ptr() for p in params))


@dataclass
class Entry:
    ids: tuple[int, ...]  # the tokens whose keys/values ``kv`` holds, in order
    media: MediaKey  # content keys of the media among those tokens (videos, images)
    kv: RowKV


class TurnCache:
    """LRU of per-row caches (see the module docstring)."""

    def __init__(self, model: Any, max_entries: int) -> None:
        self.model = model
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[tuple[int, ...], MediaKey], Entry] = OrderedDict()
        self._version = weights_version(model)

    def _check_weights(self) -> None:
        if (version := weights_version(self.model)) != self._version:
            self._entries.clear()
            self._version = version

    def __len__(self) -> int:
        return len(self._entries)

    def take(self, req: GenRequest, media: MediaKey) -> Entry | None:
        """Remove and return the longest entry whose ids (and media) start ``req``'s prompt and are
        shorter than it (at least the prompt's last token is new)."""
        self._check_weights()
        best = None
        n = len(req.prompt_ids)
        for key, e in self._entries.items():
            k = len(e.ids)
            if (
                k < n
                and (best is None or k > len(best[1].ids))
                and req.prompt_ids[:k] == e.ids
                and media[0][: len(e.media[0])] == e.media[0]
                and media[1][: len(e.media[1])] == e.media[1]
            ):
                best = (key, e)
        if best is None:
            return None
        del self._entries[best[0]]
        return best[1]

    def put(self, entry: Entry) -> None:
        self._check_weights()
        key = (entry.ids, entry.media)
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def store_rows(
        self,
        requests: Sequence[GenRequest],
        media: Sequence[MediaKey],
        cache: Any,
        width: int,
        sampled: Sequence[Sequence[int]],
    ) -> None:
        """Keep the rows that ask for it (``keep_kv``): prompt + sampled tokens but the last, cut
        (copied) out of the cache ``generate`` returned (``width`` = its left-padded prompt
        width)."""
        for i, (req, mk, toks) in enumerate(zip(requests, media, sampled)):
            start, stop = width - len(req.prompt_ids), width + len(toks) - 1
            if req.keep_kv and toks and stop <= cache.layers[0].keys.shape[2]:
                kv = [(k.clone(), v.clone()) for k, v in row_kv(cache, i, start, stop)]
                self.put(Entry(req.prompt_ids + tuple(toks[:-1]), mk, kv))


@torch.no_grad()
def continue_row(
    model: Any,
    processor: Any,
    entry: Entry,
    req: GenRequest,
    positions: torch.Tensor,
    row: int,
    width: int,
    *,
    pad_id: int,
    device: torch.device,
) -> RowKV:
    """The row's cache over its prompt but the last token: the entry's columns plus a forward of
    the new tokens (their media through the vision tower) on top of them. ``positions`` are the
    full prompts' positions (``prompt_positions``) of a batch ``width`` wide; ``row`` is this
    prompt's row in it."""
    from transformers.cache_utils import DynamicCache

    p, n = len(entry.ids), len(req.prompt_ids)
    if p == n - 1:
        return entry.kv
    new = batch_inputs(
        processor,
        [
            (
                req.prompt_ids[p : n - 1],
                req.videos[len(entry.media[0]) :],
                req.images[len(entry.media[1]) :],
            )
        ],
        pad_id=pad_id,
        device=device,
    )
    cache = DynamicCache(config=model.config)
    for li, (k, v) in enumerate(entry.kv):
        cache.update(k, v, li)
    text = ("input_ids", "attention_mask", "mm_token_type_ids")
    media = {k: v for k, v in new.items() if k not in text}
    cols = slice(width - n + p, width - 1)
    model(
        input_ids=new["input_ids"],
        attention_mask=torch.ones((1, n - 1), dtype=torch.long, device=device),
        mm_token_type_ids=new["mm_token_type_ids"],
        position_ids=position_cols(positions, slice(row, row + 1), cols),
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
        **media,
    )
    return row_kv(cache, 0, 0, n - 1)
