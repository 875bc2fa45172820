"""The decode batch of the continuous scheduler (``paravt.models.hf.continuous``): rows of many
requests, each advancing one token per forward.

State: one left-padded ``DynamicCache`` over every live row (B×H×C×D per layer), its padding mask
(B×C), and per row the token to feed next with its position (4×B for Qwen-VL: text + 3 mRoPE axes;
a decode token advances all four by one, as ``generate`` does). A new group (prefilled by
``Prefiller.prepare(cached=True)`` over its prompts but the last token) is merged by left-padding
the narrower cache with zero columns that the mask hides, exactly as a left-padded batch hides its
pad tokens; its last prompt tokens are fed by the next forward together with the live rows' last
sampled tokens. A finished row leaves (``batch_select_indices``) and the leading columns no row
uses any more are cut off.

Sampling per row, the same arithmetic as ``HFGenerator``'s ``generate`` path: the logits in fp32,
vision placeholder ids at -inf; greedy rows (τ = 0) take the argmax and report
``log_softmax(logits)``; seeded rows (top_p = 1) divide by τ and take the argmax of that plus
Gumbel noise drawn from the row's own ``torch.Generator`` (``RowSampler``'s draws, in the same
order), reporting ``log_softmax(logits / τ)``. A row stops at a stop token or at its own
``max_new_tokens``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from paravt.models.base import GenOutput, GenRequest
from paravt.models.hf.prefix_share import RowKV, row_kv
from paravt.models.hf.turn_cache import MediaKey


@dataclass
class Row:
    """One live request: what it has sampled so far and where its output goes."""

    req: GenRequest
    deliver: Callable[[GenOutput], None]
    media: MediaKey
    prefill_tokens: int
    prefill_rows: int
    t0: float
    gen: torch.Generator | None = None  # per-row Gumbel noise (seeded sampling); None: greedy
    tokens: list[int] = field(default_factory=list)
    logps: list[float] = field(default_factory=list)
    live_rows: int = 0  # rows of the forwards that sampled this row's tokens, summed

    @property
    def temperature(self) -> float:
        return self.req.sampling.temperature


def _pad_left(t: torch.Tensor, width: int, dim: int) -> torch.Tensor:
    """``t`` with zero columns prepended along ``dim`` up to ``width``."""
    missing = width - t.shape[dim]
    if missing == 0:
        return t
    shape = list(t.shape)
    shape[dim] = missing
    return torch.cat([t.new_zeros(shape), t], dim=dim)


class LiveBatch:
    """The rows being decoded (see the module docstring)."""

    def __init__(self, model: Any, vision_ids: Sequence[int], stop_ids: Sequence[int]) -> None:
        self.model = model
        self.vision = torch.tensor(sorted(vision_ids), dtype=torch.long)
        self.stops = set(stop_ids)
        self.rows: list[Row] = []
        self.cache: Any = None
        self.mask: torch.Tensor | None = None  # B×C, 1 where a row has a token
        self.next_ids: torch.Tensor | None = None  # B
        self.next_pos: torch.Tensor | None = None  # 4×B (Qwen-VL) or B

    def __len__(self) -> int:
        return len(self.rows)

    def add(
        self, rows: list[Row], cache: Any, mask: torch.Tensor, ids: torch.Tensor, pos: torch.Tensor
    ) -> None:
        """Merge prefilled rows (their cache over the prompt but its last token, which is
        ``ids``)."""
        from transformers.cache_utils import DynamicCache

        if not self.rows:
            self.rows, self.cache, self.mask, self.next_ids, self.next_pos = (
                list(rows),
                cache,
                mask,
                ids,
                pos,
            )
            return
        assert self.mask is not None and self.next_ids is not None and self.next_pos is not None
        width = max(self.mask.shape[1], mask.shape[1])
        merged = DynamicCache(config=self.model.config)
        for li, (old, new) in enumerate(zip(self.cache.layers, cache.layers, strict=True)):
            keys = torch.cat([_pad_left(old.keys, width, 2), _pad_left(new.keys, width, 2)])
            values = torch.cat([_pad_left(old.values, width, 2), _pad_left(new.values, width, 2)])
            merged.update(keys, values, li)
        self.cache = merged
        self.mask = torch.cat([_pad_left(self.mask, width, 1), _pad_left(mask, width, 1)])
        self.next_ids = torch.cat([self.next_ids, ids])
        self.next_pos = torch.cat([self.next_pos, pos], dim=-1)
        self.rows.extend(rows)

    @torch.no_grad()
    def step(self) -> list[tuple[Row, RowKV | None]]:
        """One forward of every live row; the rows that finished (with their kept cache when they
        asked for it, ``GenRequest.keep_kv``) have left the batch."""
        assert self.mask is not None and self.next_ids is not None and self.next_pos is not None
        mask = torch.cat([self.mask, self.mask.new_ones((len(self.rows), 1))], dim=1)
        out = self.model(
            input_ids=self.next_ids[:, None],
            attention_mask=mask,
            position_ids=self.next_pos[..., None],
            past_key_values=self.cache,
            use_cache=True,
            logits_to_keep=1,
        )
        self.cache, self.mask = out.past_key_values, mask
        tokens, logps = self._sample(out.logits[:, -1, :])
        self.next_ids, self.next_pos = tokens.to(self.next_ids.device), self.next_pos + 1
        finished: list[int] = []
        for i, (row, tok, lp) in enumerate(
            zip(self.rows, tokens.tolist(), logps.tolist(), strict=True)
        ):
            row.tokens.append(tok)
            row.logps.append(lp)
            row.live_rows += len(self.rows)
            if tok in self.stops or len(row.tokens) >= row.req.sampling.max_new_tokens:
                finished.append(i)
        done = [(self.rows[i], self._kept(i)) for i in finished]
        if finished:
            self._drop(finished)
        return done

    def _sample(self, raw: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(next token, its logprob) per row from the last position's logits (B×V)."""
        logits = raw.to(dtype=torch.float32, copy=True)
        logits[:, self.vision.to(logits.device)] = float("-inf")
        scores, choose = logits, logits
        sampled = [i for i, r in enumerate(self.rows) if r.gen is not None]
        if sampled:
            scores, choose = logits.clone(), logits.clone()
            for i in sampled:
                row = self.rows[i]
                scores[i] = logits[i] / row.temperature
                u = torch.rand(logits.shape[-1], generator=row.gen)
                gumbel = -torch.log(-torch.log(u.clamp(1e-20, 1.0 - 1e-7)))
                choose[i] = scores[i] + gumbel.to(logits.device)
        tokens = choose.argmax(dim=-1)
        logp = torch.log_softmax(scores, dim=-1).gather(-1, tokens[:, None])[:, 0]
        return tokens.cpu(), logp.cpu()

    def _kept(self, i: int) -> RowKV | None:
        """Row ``i``'s cache (prompt + sampled tokens but the last) when it asked to keep it."""
        row = self.rows[i]
        if not row.req.keep_kv:
            return None
        n = len(row.req.prompt_ids) + len(row.tokens) - 1
        width = self.cache.layers[0].keys.shape[2]
        return [(k.clone(), v.clone()) for k, v in row_kv(self.cache, i, width - n, width)]

    def _drop(self, gone: list[int]) -> None:
        keep = [i for i in range(len(self.rows)) if i not in set(gone)]
        self.rows = [self.rows[i] for i in keep]
        if not keep:
            self.cache = self.mask = self.next_ids = self.next_pos = None
            return
        assert self.mask is not None and self.next_ids is not None and self.next_pos is not None
        index = torch.tensor(keep, dtype=torch.long, device=self.mask.device)
        self.cache.batch_select_indices(index)
        self.mask, self.next_ids = self.mask[index], self.next_ids[index]
        self.next_pos = self.next_pos.index_select(self.next_pos.dim() - 1, index)
        used = self.mask.any(dim=0).nonzero()
        start = int(used[0, 0]) if len(used) else self.mask.shape[1]
        if start > 0:  # columns no live row uses any more
            self.mask = self.mask[:, start:]
            for layer in self.cache.layers:
                layer.keys, layer.values = layer.keys[:, :, start:], layer.values[:, :, start:]
