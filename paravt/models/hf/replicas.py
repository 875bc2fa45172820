"""Policy replicas in worker processes: the hf backend on more than one CPU core.

On a CPU the tiny models' decode steps are bound by Python, so one process uses one core whatever
its torch threads (docs/performance.md). ``ReplicaGenerator(policy, replicas=N)`` keeps the
``HFGenerator`` of this process and starts N − 1 worker processes (``spawn``), each with its own
copy of the policy and its own ``HFGenerator`` (``paravt.models.hf.replica_worker``). Every request
goes to one engine; each engine batches what it gets, as one ``HFGenerator`` does.

Routing (``Affinity``): a request that continues a row some engine kept (``keep_kv``: the main
agent's next turn extends its prompt and sampled tokens) goes to that engine, whose turn cache
holds the row's KV cache; every other request goes to the engine with the fewest rows in flight.
So the K sub-agents of a turn, the G rollouts of a prompt and the episodes of an eval spread over
the engines (each engine still shares the prefill of the identical prompts it gets). Routing
changes results by float rounding only: a row's sampled tokens depend on its prompt and seed
(``RowSampler``), not on its batch, and a continuation from a kept cache equals a full prefill
to float tolerance (so a near-tie token can still flip, as with any change of batch shape).

Weights: before a batch goes to a worker, ``turn_cache.weights_version`` (the parameters'
version counters and storage addresses) is compared with that of the last copy sent; after an
update (an optimizer step, ``load_state_dict``, replaced parameters) the worker first gets the
new weights (``pack_weights``: raw bytes over the pipe). The first batch always sends them, so a
replica never serves the checkpoint's weights when the parent holds others. As for the turn
cache, writes through ``param.data`` and fused optimizers are not seen (the trainers here use
neither). Threads: each worker gets ``torch.get_num_threads() // replicas`` (at least 1).

Failures: a worker that cannot load or dies is dropped, with one line on stderr; its requests
(and every later one) are served by the remaining engines. Every round trip has a deadline
(``timeout_s``, ``model.replica_timeout_s``): a worker that does not answer in time (hung,
SIGSTOPped) is SIGKILLed by a watchdog and started again (at most ``_MAX_RESTARTS`` times, then
dropped: ``paravt.models.hf.replica_handle``); its rows, and batches queued for it while the new
worker starts, are served by this
process, never waited for (a worker not started within ``_START_TIMEOUT_S`` is dropped). A
watchdog firing just after the reply was read keeps the reply and restarts the worker it killed.
A reply is read with a size cap (``max_reply_bytes_per_row`` × rows): one over it becomes an
error output per row (not retried: this process would produce the same), and the worker, whose
pipe is then out of step, is restarted. CPU only: on an accelerator a batch of K rows costs about
one row and one process is the right shape.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence

import torch

from paravt.config import ModelConfig
from paravt.errors import ModelError
from paravt.models.base import GenOutput, GenRequest
from paravt.models.hf.generator import HFGenerator
from paravt.models.hf.loading import LoadedPolicy
from paravt.models.hf.replica_handle import (
    DEFAULT_TIMEOUT_S,
    Replica,
)
from paravt.models.hf.replica_worker import WorkerSpec

DEFAULT_CONTINUOUS: bool = ModelConfig.model_fields["continuous_batching"].default


class Affinity:
    """Which engine kept the row a request continues (as ``turn_cache.TurnCache.take`` matches it:
    the longest kept token sequence that starts the request's prompt)."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._kept: OrderedDict[tuple[int, ...], int] = (
            OrderedDict()
        )  # prompt + sampled[:-1] -> engine

    def engine_for(self, req: GenRequest) -> int | None:
        best: tuple[int, int] | None = None  # (length, engine)
        for ids, engine in self._kept.items():
            if self._starts(req, ids) and (best is None or len(ids) > best[0]):
                best = (len(ids), engine)
        return None if best is None else best[1]

    @staticmethod
    def _starts(req: GenRequest, ids: tuple[int, ...]) -> bool:
        p = req.prompt_ids
        return 0 < len(ids) < len(p) and p[len(ids) - 1] == ids[-1] and p[: len(ids)] == ids

    def record(self, req: GenRequest, out: GenOutput, engine: int) -> None:
        """After ``engine`` served ``req``: the row it continued is consumed, the new one is
        kept."""
        if (prev := self.engine_for(req)) is not None and prev == engine:
            self._kept = OrderedDict(
                (k, e) for k, e in self._kept.items() if not self._starts(req, k)
            )
        if req.keep_kv and out.token_ids and out.finish_reason != "error":
            self._kept[req.prompt_ids + tuple(out.token_ids[:-1])] = engine
            while len(self._kept) > self.max_entries:
                self._kept.popitem(last=False)


def _check_replicas(policy: LoadedPolicy, replicas: int) -> None:
    """`ModelError` unless ``replicas`` ≥ 2 copies of a policy on the CPU, loaded from a
    directory."""
    if replicas < 2:
        raise ModelError(
            f"replicas={replicas}: a ReplicaGenerator needs at least 2 (1 is HFGenerator)"
        )
    device = next(policy.model.parameters()).device
    if device.type != "cpu":
        raise ModelError(
            f"replicas={replicas} on {device}: replicas are for CPUs; use one process on an "
            "accelerator (a batch of K rows costs about one row there)"
        )
    if not policy.path:
        raise ModelError(
            "replicas need the policy's checkpoint directory (LoadedPolicy.path) to start from"
        )


class ReplicaGenerator:
    """``Generator`` over this process's ``HFGenerator`` and N − 1 replica processes."""

    def __init__(
        self,
        policy: LoadedPolicy,
        replicas: int,
        *,
        max_batch: int = 16,
        window_s: float = 0.005,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        share_prefill: bool = True,
        turn_cache_entries: int = 32,
        prefill_threads: int | None = None,
        continuous: bool = False,
    ) -> None:
        _check_replicas(policy, replicas)
        self.local = HFGenerator(
            policy,
            max_batch=max_batch,
            window_s=window_s,
            share_prefill=share_prefill,
            turn_cache_entries=turn_cache_entries,
            prefill_threads=prefill_threads,
            continuous=continuous,
        )  # workers: the batch path (a batch per round trip)
        self.policy, self.model, self.codec = policy, policy.model, self.local.codec
        self.prefill_threads = prefill_threads
        dtype = str(next(policy.model.parameters()).dtype).removeprefix("torch.")
        spec = WorkerSpec(
            policy.path,
            "cpu",
            dtype,
            max(1, torch.get_num_threads() // replicas),
            prefill_threads,
            max_batch,
            share_prefill,
            turn_cache_entries,
        )
        self.remotes = [
            Replica(i, spec, policy.model, window_s, timeout_s=timeout_s)
            for i in range(1, replicas)
        ]
        self._finalizer = weakref.finalize(
            self, _close_all, self.remotes
        )  # workers end with this object
        self._in_flight = [0] * replicas
        self.affinity = Affinity(turn_cache_entries * replicas)

    @property
    def replicas(self) -> int:
        return 1 + len(self.remotes)

    def wait_started(self, timeout_s: float = 300.0) -> bool:
        """Block until every worker serves (they start in the background); False when one is down
        or ``timeout_s`` passes first. Requests never need this: they go elsewhere meanwhile."""
        deadline = time.monotonic() + timeout_s
        while not all(r.serving() for r in self.remotes):
            if time.monotonic() > deadline or any(r.down for r in self.remotes):
                return False
            time.sleep(0.05)
        return True

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        picks = self._assign(requests)
        rows: dict[int, list[int]] = {}
        for i, e in enumerate(picks):
            rows.setdefault(e, []).append(i)
        outs: list[GenOutput | None] = [None] * len(requests)
        for e, idx in rows.items():  # counted now: the next call's routing must see these rows
            self._in_flight[e] += len(idx)
        try:
            done = await asyncio.gather(
                *(self._serve(e, [requests[i] for i in idx]) for e, idx in rows.items())
            )
        finally:  # also when cancelled before a task started
            for e, idx in rows.items():
                self._in_flight[e] -= len(idx)
        for idx, got in zip(rows.values(), done, strict=True):
            for i, out in zip(idx, got, strict=True):
                outs[i] = out
        return outs  # type: ignore[return-value]

    async def _serve(self, engine: int, requests: list[GenRequest]) -> list[GenOutput]:
        """Serve rows (counted in ``_in_flight`` by ``generate``) on one engine."""
        if engine == 0:
            outs = await self.local.generate(requests)
        else:
            outs = await self.remotes[engine - 1].queue.generate(requests)
            lost = [i for i, o in enumerate(outs) if o.metrics.get("replica_lost")]
            if lost:  # the worker died, hung or is down: those rows are served here instead
                again = dict(
                    zip(lost, await self._serve(0, [requests[i] for i in lost]), strict=True)
                )
                for req, out in zip(requests, outs, strict=True):
                    if not out.metrics.get("replica_lost"):
                        out.metrics["replica"] = float(engine)
                        self.affinity.record(req, out, engine)
                return [again.get(i, out) for i, out in enumerate(outs)]
        for req, out in zip(requests, outs, strict=True):
            out.metrics["replica"] = float(engine)
            self.affinity.record(req, out, engine)
        return outs

    def _assign(self, requests: Sequence[GenRequest]) -> list[int]:
        """An engine per request: the one keeping the row it continues while that is up, else the
        least busy one."""
        up = [0] + [r.index for r in self.remotes if r.serving()]
        load = {e: self._in_flight[e] for e in up}
        picks = []
        for req in requests:
            engine = self.affinity.engine_for(req)
            if engine not in load:
                engine = min(up, key=lambda e: (load[e], e))
            load[engine] += 1
            picks.append(engine)
        return picks

    async def aclose(self) -> None:
        await self.local.aclose()
        for r in self.remotes:
            await r.queue.aclose()
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        """Stop the worker processes (idempotent); later requests are served by this process."""
        self._finalizer()


def _close_all(remotes: list[Replica]) -> None:
    for r in remotes:
        r.close()


def hf_generator(
    policy: LoadedPolicy,
    *,
    replicas: int = 1,
    prefill_threads: int | None = None,
    replica_timeout_s: float = DEFAULT_TIMEOUT_S,
    continuous: bool = DEFAULT_CONTINUOUS,
) -> HFGenerator | ReplicaGenerator:
    """The hf backend of ``ModelConfig``: one process (``replicas=1``) or N replica processes;
    ``continuous``: this process's engine batches step by step (``paravt.models.hf.continuous``)."""
    if replicas == 1:
        return HFGenerator(policy, prefill_threads=prefill_threads, continuous=continuous)
    return ReplicaGenerator(
        policy,
        replicas,
        prefill_threads=prefill_threads,
        timeout_s=replica_timeout_s,
        continuous=continuous,
    )
