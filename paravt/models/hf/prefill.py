"""The prompt side of an hf ``generate`` batch: which tokens are actually run through the model.

Three cases, combined per batch (``Prefiller.prepare``):
- identical prompts (token ids and media content) share one prefill (``prefix_share``);
- a prompt that extends a kept row cache (the main agent's next turn, ``turn_cache``) runs only
  its new tokens on top of it;
- every other distinct prompt is prefilled, batched and left-padded, as ``generate`` would.
The per-row caches are assembled into one left-padded cache over all but the last prompt token and
``generate`` continues from it with the positions it would have computed itself. Without any
sharing or kept cache the batch goes to ``generate`` unchanged (``batch_inputs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from paravt.models.base import GenRequest
from paravt.models.hf.prefix_share import (
    RowKV,
    assemble,
    generate_kwargs,
    media_key,
    plain_layers,
    position_cols,
    prefill_rows,
    prompt_positions,
    row_kv,
    share_plan,
)
from paravt.models.hf.turn_cache import Entry, MediaKey, TurnCache, continue_row
from paravt.models.media import batch_inputs


@dataclass
class Prepared:
    kwargs: dict[str, Any]  # generate() inputs
    prefill_rows: int  # distinct prompts run (fully or their new part)
    prefill_tokens: list[int]  # per row: tokens of its prompt run through the model
    media: list[MediaKey] = field(default_factory=list)


class Prefiller:
    def __init__(
        self,
        model: Any,
        processor: Any,
        *,
        pad_id: int,
        vision_ids: Sequence[int],
        share: bool,
        turn_entries: int,
    ) -> None:
        self.model, self.processor, self.pad_id = model, processor, pad_id
        self.vision_ids = set(vision_ids)
        self.share = share
        self.turns = TurnCache(model, turn_entries) if turn_entries > 0 else None

    def _plain(
        self, requests: Sequence[GenRequest], media: list[MediaKey], device: torch.device
    ) -> Prepared:
        seqs = [(r.prompt_ids, r.videos, r.images) for r in requests]
        inputs = batch_inputs(self.processor, seqs, pad_id=self.pad_id, device=device)
        return Prepared(inputs, len(requests), [len(r.prompt_ids) for r in requests], media)

    def prepare(
        self, requests: Sequence[GenRequest], device: torch.device, *, cached: bool = False
    ) -> Prepared:
        """The ``generate`` inputs of a batch; ``cached``: always with the rows' cache over their
        prompts but the last token (the continuous scheduler's admission), never the plain path
        (the caller sends a prompt ending in a media placeholder elsewhere)."""
        memo: dict[int, tuple[Any, ...]] = {}
        media = [media_key(r, memo) for r in requests]
        if any(len(r.prompt_ids) < 2 or r.prompt_ids[-1] in self.vision_ids for r in requests):
            return self._plain(requests, media, device)  # generate must feed a text last token
        plan = share_plan(requests, media) if self.share and len(requests) > 1 else None
        firsts, index = plan or (list(range(len(requests))), list(range(len(requests))))
        entries = [
            self.turns.take(requests[d], media[d]) if self.turns is not None else None
            for d in firsts
        ]
        if plan is None and all(e is None for e in entries) and not cached:
            return self._plain(requests, media, device)
        distinct = [requests[d] for d in firsts]
        host = batch_inputs(
            self.processor,
            [(r.prompt_ids, r.videos, r.images) for r in distinct],
            pad_id=self.pad_id,
            device="cpu",
        )
        # the rope index reads every media grid with .item(): on the host it waits for no device
        positions = prompt_positions(self.model, host).to(device)
        inputs = {k: v.to(device) for k, v in host.items()}
        cache = self._row_caches(distinct, entries, inputs, positions, index, device)
        counts = [
            len(r.prompt_ids) - (len(e.ids) if e is not None else 0)
            for r, e in zip(distinct, entries)
        ]
        return Prepared(
            generate_kwargs(inputs, positions, index, cache),
            len(firsts),
            [counts[i] for i in index],
            media,
        )

    def _row_caches(
        self,
        distinct: list[GenRequest],
        entries: list[Entry | None],
        inputs: dict[str, torch.Tensor],
        positions: torch.Tensor,
        index: Sequence[int],
        device: torch.device,
    ) -> Any:
        """One cache of all rows over their prompts but the last token."""
        width = inputs["input_ids"].shape[1]
        rows = torch.tensor(list(index), dtype=torch.long, device=device)
        if all(e is None for e in entries):  # one batched prefill, expanded to the rows
            cache, _ = prefill_rows(self.model, inputs, positions)
            cache.batch_select_indices(rows)
            return cache
        kv: list[RowKV | None] = [None] * len(distinct)
        fresh = [d for d, e in enumerate(entries) if e is None]
        if fresh:
            sub = batch_inputs(
                self.processor,
                [(distinct[d].prompt_ids, distinct[d].videos, distinct[d].images) for d in fresh],
                pad_id=self.pad_id,
                device=device,
            )
            w = sub["input_ids"].shape[1]
            sub_pos = position_cols(
                positions, torch.tensor(fresh, device=device), slice(width - w, None)
            )
            cache, lens = prefill_rows(self.model, sub, sub_pos)
            for j, d in enumerate(fresh):
                kv[d] = row_kv(cache, j, w - lens[j], w - 1)
        for d, e in enumerate(entries):
            if e is not None:
                kv[d] = continue_row(
                    self.model,
                    self.processor,
                    e,
                    distinct[d],
                    positions,
                    d,
                    width,
                    pad_id=self.pad_id,
                    device=device,
                )
        return assemble(self.model, [kv[i] for i in index], width - 1)  # type: ignore[misc]

    def keep(
        self,
        requests: Sequence[GenRequest],
        prepared: Prepared,
        cache: Any,
        width: int,
        sampled: Sequence[Sequence[int]],
    ) -> None:
        """Keep the rows that asked for it (``GenRequest.keep_kv``) for their next turn."""
        if (
            self.turns is not None
            and cache is not None
            and any(r.keep_kv for r in requests)
            and plain_layers(cache)
        ):
            self.turns.store_rows(requests, prepared.media, cache, width, sampled)
