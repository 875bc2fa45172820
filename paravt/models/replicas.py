"""Policy replicas in worker processes: the hf backend on more than one CPU core.

On a CPU the tiny models' decode steps are bound by Python, so one process uses one core whatever
its torch threads (docs/performance.md). ``ReplicaGenerator(policy, replicas=N)`` keeps the
``HFGenerator`` of this process and starts N − 1 worker processes (``spawn``), each with its own
copy of the policy and its own ``HFGenerator`` (``paravt.models.replica_worker``). Every request
goes to one engine; each engine batches what it gets, as one ``HFGenerator`` does.

Routing (``route_key``): requests with the same first two messages and the same first video (the
G rollouts of a prompt; the turns of one main agent) stick to one engine, so that they still share
their prefill and the turn's kept KV cache; anything new goes to the engine with the fewest rows
in flight (the K sub-agents of a turn split across engines). Routing changes no result: a row's
tokens depend only on its prompt and seed (``RowSampler``), greedy rows on float rounding only.

Weights: before a batch goes to a worker, the parameters' version counters
(``turn_cache.weights_version``) are compared with those of the last copy sent; after any
in-place update (an optimizer step, ``load_state_dict``) the worker first gets the new weights
(``pack_weights``: raw bytes over the pipe). Keep updating weights in place, as the turn cache
also requires. The first batch always sends them, so a replica never serves the checkpoint's
weights when the parent holds others.

Failures: a worker that cannot load or dies is dropped, with one line on stderr; its requests
(and every later one) are served by the remaining engines. CPU only: on an accelerator a batch
of K rows costs about one row and one process is the right shape.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import sys
import time
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

import torch

from paravt.errors import ModelError
from paravt.models.base import GenOutput, GenRequest
from paravt.models.batching import Batcher
from paravt.models.hf import HFGenerator, error_output
from paravt.models.loading import LoadedPolicy
from paravt.models.replica_worker import WorkerSpec, pack_weights, serve
from paravt.models.turn_cache import weights_version

_STICKY_KEYS = 4096
_START_TIMEOUT_S = 300.0


def route_key(req: GenRequest) -> Hashable:
    """What makes two requests belong together: their first two messages' text and the identity
    of their first video (an episode reuses its overview's ``Frames`` across turns)."""
    texts = tuple(m.content for m in req.messages[:2])
    return texts, id(req.videos[0]) if req.videos else None


class _Replica:
    """One worker process and the queue of requests it serves."""

    def __init__(self, index: int, spec: WorkerSpec, model: Any, window_s: float) -> None:
        ctx = mp.get_context("spawn")
        self.index, self.model = index, model
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=serve, args=(child, spec), daemon=True, name=f"paravt-replica-{index}")
        self.proc.start()
        child.close()
        self.ready = False
        self.down: str | None = None
        self.synced: int | None = None
        self.queue = Batcher(self.call, window_s=window_s)

    def call(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        """Blocking round trip (in the queue's worker thread); never raises."""
        t0 = time.perf_counter()
        try:
            if not self.ready:
                self._wait_ready()
            if self.down is None:
                version = weights_version(self.model)
                if version != self.synced:
                    self.conn.send(("weights", pack_weights(self.model)))
                    self.synced = version
                self.conn.send(("generate", list(requests)))
                _, outputs = self.conn.recv()
                return outputs
        except (EOFError, OSError) as err:
            self._drop(f"{type(err).__name__}: {err}")
        return [error_output(self.down or "replica is down", time.perf_counter() - t0) for _ in requests]

    def serving(self) -> bool:
        """Up and started (never blocks): requests are routed to a replica only once it is."""
        if self.down is None and not self.ready and self.conn.poll(0):
            self._wait_ready()
        return self.ready and self.down is None

    def _wait_ready(self) -> None:
        if not self.conn.poll(_START_TIMEOUT_S):
            self._drop(f"no answer within {_START_TIMEOUT_S:g} s of starting")
            return
        try:
            kind, payload = self.conn.recv()
        except (EOFError, OSError) as err:
            self._drop(f"it exited while starting ({type(err).__name__})")
            return
        if kind != "ready":
            self._drop(str(payload))
            return
        self.ready = True

    def _drop(self, why: str) -> None:
        if self.down is None:
            self.down = f"replica {self.index} is down: {why}"
            print(f"paravt: {self.down}; its requests go to the other engines", file=sys.stderr)
        if self.proc.is_alive():
            self.proc.terminate()

    def close(self) -> None:
        if self.down is None:
            self.down = f"replica {self.index} was closed"
        if self.proc.is_alive() and self.ready:
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.proc.join(timeout=10)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout=10)
        self.conn.close()


class ReplicaGenerator:
    """``Generator`` over this process's ``HFGenerator`` and N − 1 replica processes."""

    def __init__(self, policy: LoadedPolicy, replicas: int, *, max_batch: int = 16, window_s: float = 0.005,
                 share_prefill: bool = True, turn_cache_entries: int = 32, prefill_threads: int | None = None) -> None:
        if replicas < 2:
            raise ModelError(f"replicas={replicas}: a ReplicaGenerator needs at least 2 (1 is HFGenerator)")
        device = next(policy.model.parameters()).device
        if device.type != "cpu":
            raise ModelError(f"replicas={replicas} on {device}: replicas are for CPUs; use one process on an "
                             "accelerator (a batch of K rows costs about one row there)")
        if not policy.path:
            raise ModelError("replicas need the policy's checkpoint directory (LoadedPolicy.path) to start from")
        self.local = HFGenerator(policy, max_batch=max_batch, window_s=window_s, share_prefill=share_prefill,
                                 turn_cache_entries=turn_cache_entries, prefill_threads=prefill_threads)
        self.policy, self.model, self.codec = policy, policy.model, self.local.codec
        self.prefill_threads = prefill_threads
        dtype = str(next(policy.model.parameters()).dtype).removeprefix("torch.")
        spec = WorkerSpec(policy.path, "cpu", dtype, torch.get_num_threads(), prefill_threads, max_batch,
                          share_prefill, turn_cache_entries)
        self.remotes = [_Replica(i, spec, policy.model, window_s) for i in range(1, replicas)]
        self._finalizer = weakref.finalize(self, _close_all, self.remotes)  # workers end with this object
        self._in_flight = [0] * replicas
        self._sticky: OrderedDict[Hashable, int] = OrderedDict()

    @property
    def replicas(self) -> int:
        return 1 + len(self.remotes)

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        picks = self._assign(requests)
        rows: dict[int, list[int]] = {}
        for i, e in enumerate(picks):
            rows.setdefault(e, []).append(i)
        outs: list[GenOutput | None] = [None] * len(requests)
        done = await asyncio.gather(*(self._serve(e, [requests[i] for i in idx]) for e, idx in rows.items()))
        for idx, got in zip(rows.values(), done, strict=True):
            for i, out in zip(idx, got, strict=True):
                outs[i] = out
        return outs  # type: ignore[return-value]

    async def _serve(self, engine: int, requests: list[GenRequest]) -> list[GenOutput]:
        self._in_flight[engine] += len(requests)
        try:
            if engine == 0:
                outs = await self.local.generate(requests)
            else:
                outs = await self.remotes[engine - 1].queue.generate(requests)
                if self.remotes[engine - 1].down is not None:  # served by this process instead
                    return await self._serve(0, requests)
        finally:
            self._in_flight[engine] -= len(requests)
        for out in outs:
            out.metrics["replica"] = float(engine)
        return outs

    def _assign(self, requests: Sequence[GenRequest]) -> list[int]:
        """An engine per request: its key's engine while that is up, else the least busy one."""
        up = [0] + [r.index for r in self.remotes if r.serving()]
        load = {e: self._in_flight[e] for e in up}
        picks = []
        for req in requests:
            key = route_key(req)
            engine = self._sticky.get(key)
            if engine not in load:
                engine = min(up, key=lambda e: (load[e], e))
            self._sticky[key] = engine
            self._sticky.move_to_end(key)
            load[engine] += 1
            picks.append(engine)
        while len(self._sticky) > _STICKY_KEYS:
            self._sticky.popitem(last=False)
        return picks

    async def aclose(self) -> None:
        await self.local.aclose()
        for r in self.remotes:
            await r.queue.aclose()
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        """Stop the worker processes (idempotent); later requests are served by this process."""
        self._finalizer()


def _close_all(remotes: list[_Replica]) -> None:
    for r in remotes:
        r.close()


def hf_generator(policy: LoadedPolicy, *, replicas: int = 1, prefill_threads: int | None = None
                 ) -> HFGenerator | ReplicaGenerator:
    """The hf backend of ``ModelConfig``: one process (``replicas=1``) or N replica processes."""
    if replicas == 1:
        return HFGenerator(policy, prefill_threads=prefill_threads)
    return ReplicaGenerator(policy, replicas, prefill_threads=prefill_threads)
