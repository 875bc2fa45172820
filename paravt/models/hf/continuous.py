"""Continuous (step-level) batching of the hf engine: one decode loop owns the model.

``HFGenerator(continuous=True)`` (``model.continuous_batching``) sends every ``generate`` call
here instead of the window batcher (``paravt.models.hf.batching``). One worker thread runs the
loop while any request is live or waiting:

1. admit the requests that arrived since the last forward (at most ``max_rows`` live): they are
   prefilled together as their own batch by the engine's ``Prefiller`` (identical prompts, e.g.
   a group's G rollouts, share one prefill and one vision-tower pass; a main turn that extends a
   kept row cache runs only its new tokens), over their prompts but the last token, and merged
   into the live batch (``paravt.models.hf.live_batch``);
2. one forward of every live row: each advances one token (a new row's first forward feeds its
   last prompt token and samples its first token);
3. finished rows leave at once: their output is delivered to the caller's event loop, and their
   cache is kept for their next turn when they asked (``keep_kv``).

So the sub-agents of several episodes, the G rollouts of a group and the main turns of other
episodes decode in the same forwards whenever they are alive at the same moment, where the window
batcher serves whatever arrived during a batch only after the whole batch has finished.

Not continuous (served by the engine's ``run_batch`` between two forwards, as before): a request
whose sampling is unseeded or has top_p < 1 (the batch-level RNG path), a prompt shorter than two
tokens or ending in a media placeholder, and every request of a model whose cache has
sliding-window layers. An admission that raises falls back to ``run_batch`` (row by row on
failure); a forward that raises ends its live rows with ``finish_reason="error"``.

Why not transformers' own ``ContinuousBatchingManager`` / ``generate_batch`` (5.10): its
requests are token lists only (no ``pixel_values_videos`` / grid), its positions are 1-D
``range(past, past + n)`` (Qwen-VL needs the 3-D mRoPE positions with the media's shift), and its
sampler has neither per-row seeds nor our logprob definition (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

import torch

from paravt.models.base import FinishReason, GenOutput, GenRequest, error_output
from paravt.models.hf.batching import DecodeStats, prefill_threads
from paravt.models.hf.live_batch import LiveBatch, Row
from paravt.models.hf.prefix_share import plain_layers
from paravt.models.hf.turn_cache import Entry


class Engine(Protocol):
    """What the loop uses of its ``HFGenerator``."""

    model: Any
    codec: Any
    prefiller: Any
    prefill_threads: int | None

    def run_batch(self, requests: Sequence[GenRequest]) -> list[GenOutput]: ...

    def chunks(self, batch: list[GenRequest]) -> list[list[int]]: ...


Pending = tuple[GenRequest, "asyncio.Future[GenOutput]", asyncio.AbstractEventLoop]


def _deliver(
    fut: asyncio.Future[GenOutput], loop: asyncio.AbstractEventLoop, out: GenOutput
) -> None:
    def put() -> None:
        if not fut.done():
            fut.set_result(out)

    try:
        loop.call_soon_threadsafe(put)
    except RuntimeError:  # the caller's event loop has closed (its asyncio.run ended): nobody waits
        pass


class ContinuousScheduler:
    """The decode loop of one ``HFGenerator`` (see the module docstring)."""

    def __init__(self, engine: Engine, *, window_s: float, max_rows: int) -> None:
        self.engine, self.window_s, self.max_rows = engine, window_s, max_rows
        codec = engine.codec
        self.live = LiveBatch(engine.model, codec.vision_token_ids, codec.stop_token_ids)
        self._lock = threading.Lock()
        self._pending: list[Pending] = []
        self._running = False
        self._forwards = self._row_steps = 0

    def stats(self) -> DecodeStats:
        return DecodeStats(self._forwards, self._row_steps)

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        if not requests:
            return []
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in requests]
        with self._lock:
            self._pending.extend((r, f, loop) for r, f in zip(requests, futures, strict=True))
            start, self._running = not self._running, True
        if start:
            self._task = asyncio.create_task(self._run())
        return list(await asyncio.gather(*futures))

    async def aclose(self) -> None:
        task = getattr(self, "_task", None)
        if task is not None and not task.done():
            await task

    async def _run(self) -> None:
        await asyncio.sleep(
            self.window_s
        )  # an idle engine lets a burst (K sub-agents, G rollouts) gather
        await asyncio.to_thread(self._drive)

    def _drive(self) -> None:
        """The loop: admit, forward, deliver; returns when nothing is live or waiting."""
        try:
            while True:
                with self._lock:
                    room = max(0, self.max_rows - len(self.live))
                    take, self._pending = self._pending[:room], self._pending[room:]
                    if not take and not len(self.live):
                        self._running = False
                        return
                if take:
                    self._admit(take)
                if len(self.live):
                    self._step()
        except Exception as err:  # noqa: BLE001 - never leave a caller waiting
            self._fail_all(f"{type(err).__name__}: {err}")

    def _fail_all(self, why: str) -> None:
        with self._lock:
            waiting, self._pending, self._running = self._pending, [], False
        for row in self.live.rows:
            row.deliver(error_output(f"engine failed: {why}", time.perf_counter() - row.t0))
        self.live = LiveBatch(
            self.engine.model, self.engine.codec.vision_token_ids, self.engine.codec.stop_token_ids
        )
        for _, fut, loop in waiting:
            _deliver(fut, loop, error_output(f"engine failed: {why}"))

    def _continuous(self, req: GenRequest) -> bool:
        s, vision = req.sampling, self.live.vision.tolist()
        seeded = s.temperature == 0 or (s.top_p >= 1.0 and s.seed is not None)
        return seeded and len(req.prompt_ids) >= 2 and req.prompt_ids[-1] not in vision

    def _admit(self, take: list[Pending]) -> None:
        joins = [p for p in take if self._continuous(p[0])]
        others = [p for p in take if not self._continuous(p[0])]
        if others:  # the batch-level paths, as the window batcher serves them
            for rows in self.engine.chunks([r for r, _, _ in others]):
                outs = self.engine.run_batch([others[i][0] for i in rows])
                for i, out in zip(rows, outs, strict=True):
                    _deliver(others[i][1], others[i][2], out)
        if joins:
            try:
                self._prefill(joins)
            except Exception:  # noqa: BLE001 - served by the batch path (row by row on failure)
                for (_, fut, loop), out in zip(
                    joins, self.engine.run_batch([p[0] for p in joins]), strict=True
                ):
                    _deliver(fut, loop, out)

    @torch.no_grad()
    def _prefill(self, joins: list[Pending]) -> None:
        """Prefill the new requests together and merge them into the live batch."""
        t0 = time.perf_counter()
        requests = [p[0] for p in joins]
        device = next(self.engine.model.parameters()).device
        with prefill_threads(self.engine.prefill_threads):
            prep = self.engine.prefiller.prepare(requests, device, cached=True)
        kw = prep.kwargs
        cache = kw["past_key_values"]
        if not plain_layers(cache):
            raise ValueError("a sliding-window cache cannot be merged")
        rows = [
            Row(
                req,
                _deliverer(fut, loop),
                prep.media[i],
                prep.prefill_tokens[i],
                prep.prefill_rows,
                t0,
                _row_generator(req),
            )
            for i, (req, fut, loop) in enumerate(joins)
        ]
        pos = kw["position_ids"]
        self.live.add(
            rows, cache, kw["attention_mask"][:, :-1], kw["input_ids"][:, -1], pos[..., -1]
        )

    def _step(self) -> None:
        n = len(self.live)
        try:
            finished = self.live.step()
        except Exception as err:  # noqa: BLE001 - the live rows end with an error output
            self._fail_live(f"{type(err).__name__}: {err}")
            return
        self._forwards, self._row_steps = self._forwards + 1, self._row_steps + n
        for row, kv in finished:
            row.deliver(self._output(row))
            turns = self.engine.prefiller.turns
            if kv is not None and turns is not None:
                turns.put(Entry(row.req.prompt_ids + tuple(row.tokens[:-1]), row.media, kv))

    def _fail_live(self, why: str) -> None:
        for row in self.live.rows:
            row.deliver(error_output(f"engine failed: {why}", time.perf_counter() - row.t0))
        self.live = LiveBatch(
            self.engine.model, self.engine.codec.vision_token_ids, self.engine.codec.stop_token_ids
        )

    def _output(self, row: Row) -> GenOutput:
        tokens = row.tokens
        finish: FinishReason = "stop" if tokens and tokens[-1] in self.live.stops else "length"
        metrics = {
            "latency_s": time.perf_counter() - row.t0,
            "batch_size": row.live_rows / max(1, len(tokens)),
            "prefill_rows": float(row.prefill_rows),
            "prefill_tokens": float(row.prefill_tokens),
        }
        return GenOutput(
            token_ids=tuple(tokens),
            logprobs=tuple(row.logps),
            text=self.engine.codec.decode(tokens),
            finish_reason=finish,
            metrics=metrics,
        )


def _deliverer(fut: asyncio.Future[GenOutput], loop: asyncio.AbstractEventLoop) -> Any:
    return lambda out: _deliver(fut, loop, out)


def _row_generator(req: GenRequest) -> torch.Generator | None:
    """The row's own noise source (``RowSampler``'s: a CPU generator seeded with its seed)."""
    s = req.sampling
    if s.temperature == 0:
        return None
    return torch.Generator(device="cpu").manual_seed(int(s.seed))  # type: ignore[arg-type]
