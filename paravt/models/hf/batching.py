"""The request queue of a local engine: concurrent ``generate`` calls meet in one batch.

Requests wait ``window_s`` for others (the sub-agents of a turn, the G rollouts of a group, the
episodes of an eval); the batch is split by ``chunker`` into the groups that can run together and
each group is served by ``serve``, a blocking function run in a worker thread
(``asyncio.to_thread``) so that the event loop stays free. Batches of one queue never run
concurrently. A ``serve`` or
``chunker`` that raises (or answers too few rows) ends its batch: every row not answered yet gets
a ``finish_reason="error"`` output, so no request is left waiting. Used by
``HFGenerator`` (serve = ``run_batch`` in this process) and by the replica engines of
``paravt.models.hf.replicas`` (serve = a round trip to a worker process). Also here: the counts
of decode forwards (``DecodeStats``) and the prefill's thread count (``prefill_threads``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch

from paravt.models.base import GenOutput, GenRequest, error_output

Serve = Callable[[Sequence[GenRequest]], list[GenOutput]]
Chunker = Callable[[list[GenRequest]], list[list[int]]]  # the batch's row indices, grouped


@contextlib.contextmanager
def prefill_threads(n: int | None) -> Iterator[int]:
    """Run a batch with ``n`` torch threads until `_DecodeThreads` lowers them; restore after.
    Yields the caller's thread count (what the decode steps go back to)."""
    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield before
    finally:
        torch.set_num_threads(before)


def one_chunk(batch: list[GenRequest]) -> list[list[int]]:
    return [list(range(len(batch)))]


@dataclass(frozen=True)
class BatcherStats:
    """What a queue has served so far: how full its batches were and how long the engine was
    busy."""

    batches: int  # serve calls
    rows: int  # requests they answered
    busy_s: float  # seconds inside serve

    def to_json(self) -> dict[str, float]:
        return {
            "batches": self.batches,
            "rows": self.rows,
            "busy_s": self.busy_s,
            "rows_per_batch": self.rows / self.batches if self.batches else 0.0,
        }


@dataclass(frozen=True)
class DecodeStats:
    """Forwards of an engine that sampled a token, and the live rows they advanced (a row is live
    until its stop token or its own ``max_new_tokens``): ``rows_per_forward`` is how many
    sequences decode together on average."""

    forwards: int
    rows: int

    def to_json(self) -> dict[str, float]:
        return {
            "forwards": self.forwards,
            "rows": self.rows,
            "rows_per_forward": self.rows / self.forwards if self.forwards else 0.0,
        }


class Batcher:
    def __init__(self, serve: Serve, *, window_s: float, chunker: Chunker = one_chunk) -> None:
        self.serve, self.window_s, self.chunker = serve, window_s, chunker
        self._pending: list[tuple[GenRequest, asyncio.Future[GenOutput]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._served = (0, 0, 0.0)  # batches, rows, busy seconds

    def stats(self) -> BatcherStats:
        return BatcherStats(*self._served)

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        if not requests:
            return []
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in requests]
        self._pending.extend(zip(requests, futures))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_soon())
        return list(await asyncio.gather(*futures))

    async def aclose(self) -> None:
        if self._flusher is not None and not self._flusher.done():
            await self._flusher

    async def _flush_soon(self) -> None:
        await asyncio.sleep(self.window_s)
        while self._pending:
            batch, self._pending = self._pending, []
            why = "no output for this request"
            try:
                for rows in self.chunker([r for r, _ in batch]):
                    t0 = time.perf_counter()
                    outs = await asyncio.to_thread(self.serve, [batch[i][0] for i in rows])
                    b, n, busy = self._served
                    self._served = (b + 1, n + len(rows), busy + time.perf_counter() - t0)
                    if len(outs) != len(rows):
                        raise RuntimeError(f"{len(outs)} outputs for {len(rows)} requests")
                    for i, out in zip(rows, outs, strict=True):
                        if not batch[i][1].done():
                            batch[i][1].set_result(out)
            except Exception as err:  # noqa: BLE001 - the engine failed: per-row errors below
                why = f"{type(err).__name__}: {err}"
            for _, fut in batch:  # every request gets an output, never a hang
                if not fut.done():
                    fut.set_result(error_output(f"engine failed: {why}"))
