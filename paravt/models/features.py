"""Per-item vision-processor outputs, computed once per media item and reused.

A media item (``Frames``) of a request is processed twice on the way to the model: once by the
chat codec (``processor(text, videos)`` expands its placeholders, and computes its pixel values
as a side effect) and again when the batch's forward inputs are built (``media.batch_inputs``).
The main agent's overview video is, moreover, part of every turn's prompt. ``FeatureCache`` keeps
each item's processor output (pixel rows and grid) under the identity of its ``Frames`` object
and the processor, so that each item is processed once while it is alive.

Items are processed ONE at a time: Qwen-VL's video processor on a list of same-shape videos
stacks them and its patch reshape of the stacked tensor costs ~10× one video's for 4 videos on
a CPU (measured: 12.8 ms vs 4 × 1.2 ms, 8 frames of 128²). Per-item and batched outputs are
bit-identical (the processing is per item; tested).

Bounded (``max_items`` entries and ``max_bytes`` of tensors, least recently used dropped first;
a 16-frame 224² crop is ~10 MB of float pixels) and keyed by object identity with a weak
reference: an entry leaves when its ``Frames`` is freed, and a new object that reuses the id
never matches.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import torch

from paravt.video.types import Frames

Item = tuple[torch.Tensor, torch.Tensor]  # (pixel rows P×C, grid 1×3) of one media item


class FeatureCache:
    def __init__(self, max_items: int = 64, max_bytes: int = 256 * 2**20) -> None:
        self.max_items, self.max_bytes = max_items, max_bytes
        self._items: OrderedDict[tuple[int, int, str], tuple[weakref.ref[Frames], Item]] = (
            OrderedDict()
        )
        self._bytes = 0
        # the codec (event loop) and the hf worker thread both use it; re-entrant because a freed
        # Frames' weakref callback may run (garbage collection) while this thread holds it
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def get(self, processor: Any, frames: Frames, kind: str) -> Item | None:
        key = (id(processor), id(frames), kind)
        with self._lock:
            hit = self._items.get(key)
            if hit is None or hit[0]() is not frames:
                return None
            self._items.move_to_end(key)
            return hit[1]

    def put(self, processor: Any, frames: Frames, kind: str, item: Item) -> None:
        size = sum(t.numel() * t.element_size() for t in item)
        if self.max_items <= 0 or size > self.max_bytes:
            return
        key = (id(processor), id(frames), kind)
        ref = weakref.ref(frames, partial(self._freed, key))  # freed frames leave at once
        with self._lock:
            self._drop(key)
            self._items[key] = (ref, item)
            self._bytes += size
            while len(self._items) > self.max_items or self._bytes > self.max_bytes:
                self._drop(next(iter(self._items)))

    def _freed(self, key: tuple[int, int, str], _ref: object) -> None:
        self._forget(key)

    def _forget(self, key: tuple[int, int, str]) -> None:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None and hit[0]() is None:
                self._drop(key)

    def _drop(self, key: tuple[int, int, str]) -> None:
        hit = self._items.pop(key, None)
        if hit is not None:
            self._bytes -= sum(t.numel() * t.element_size() for t in hit[1])

    def put_output(
        self, processor: Any, out: Any, videos: Sequence[Frames], images: Sequence[Frames]
    ) -> None:
        """Remember the per-item rows of a processor output over ``videos`` / ``images``."""
        for kind, items, pix, grid in (
            ("video", videos, "pixel_values_videos", "video_grid_thw"),
            ("image", images, "pixel_values", "image_grid_thw"),
        ):
            if not items or pix not in out or grid not in out:
                continue
            grids = torch.as_tensor(out[grid])  # N×3
            rows = torch.as_tensor(out[pix]).split([int(n) for n in grids.prod(-1)])
            for frames, r, g in zip(items, rows, grids, strict=True):
                self.put(processor, frames, kind, (r, g[None]))

    def items(
        self, processor: Any, media: Sequence[Frames], kind: str, compute: Callable[[Frames], Item]
    ) -> Item:
        """Rows and grids of ``media`` in order (cached ones reused, the others computed one by
        one)."""
        got: list[Item] = []
        for frames in media:
            item = self.get(processor, frames, kind)
            if item is None:
                item = compute(frames)
                self.put(processor, frames, kind, item)
            got.append(item)
        return torch.cat([r for r, _ in got]), torch.cat([g for _, g in got])


FEATURES = FeatureCache()
