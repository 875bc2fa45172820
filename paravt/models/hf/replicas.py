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
dropped); its rows, and batches queued for it while the new worker starts, are served by this
process, never waited for (a worker not started within ``_START_TIMEOUT_S`` is dropped). A
watchdog firing just after the reply was read keeps the reply and restarts the worker it killed.
A reply is read with a size cap (``max_reply_bytes_per_row`` × rows): one over it becomes an
error output per row (not retried: this process would produce the same), and the worker, whose
pipe is then out of step, is restarted. CPU only: on an accelerator a batch of K rows costs about
one row and one process is the right shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import pickle
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import torch

from paravt.config import ModelConfig
from paravt.errors import ModelError
from paravt.models.base import GenOutput, GenRequest
from paravt.models.hf.batching import Batcher
from paravt.models.hf.generator import HFGenerator, error_output
from paravt.models.hf.loading import LoadedPolicy
from paravt.models.hf.replica_worker import Watchdog, WorkerSpec, pack_weights, serve
from paravt.models.hf.turn_cache import weights_version

_START_TIMEOUT_S = 300.0
_MAX_RESTARTS = 2
DEFAULT_TIMEOUT_S: float = ModelConfig.model_fields["replica_timeout_s"].default  # written once, in config
DEFAULT_CONTINUOUS: bool = ModelConfig.model_fields["continuous_batching"].default
DEFAULT_MAX_REPLY_BYTES_PER_ROW = 16 << 20


class Affinity:
    """Which engine kept the row a request continues (as ``turn_cache.TurnCache.take`` matches it:
    the longest kept token sequence that starts the request's prompt)."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._kept: OrderedDict[tuple[int, ...], int] = OrderedDict()  # prompt + sampled[:-1] -> engine

    def engine_for(self, req: GenRequest) -> int | None:
        best: tuple[int, int] | None = None  # (length, engine)
        for ids, engine in self._kept.items():
            if self._starts(req, ids) and (best is None or len(ids) > best[0]):
                best = (len(ids), engine)
        return None if best is None else best[1]

    @staticmethod
    def _starts(req: GenRequest, ids: tuple[int, ...]) -> bool:
        p = req.prompt_ids
        return 0 < len(ids) < len(p) and p[len(ids) - 1] == ids[-1] and p[:len(ids)] == ids

    def record(self, req: GenRequest, out: GenOutput, engine: int) -> None:
        """After ``engine`` served ``req``: the row it continued is consumed, the new one is kept."""
        if (prev := self.engine_for(req)) is not None and prev == engine:
            self._kept = OrderedDict((k, e) for k, e in self._kept.items() if not self._starts(req, k))
        if req.keep_kv and out.token_ids and out.finish_reason != "error":
            self._kept[req.prompt_ids + tuple(out.token_ids[:-1])] = engine
            while len(self._kept) > self.max_entries:
                self._kept.popitem(last=False)


class _Replica:
    """One worker process and the queue of requests it serves."""

    def __init__(self, index: int, spec: WorkerSpec, model: Any, window_s: float, *,
                 timeout_s: float = DEFAULT_TIMEOUT_S, max_reply_bytes_per_row: int = DEFAULT_MAX_REPLY_BYTES_PER_ROW
                 ) -> None:
        self.index, self.model, self.spec = index, model, spec
        self.timeout_s, self.max_reply_bytes_per_row = timeout_s, max_reply_bytes_per_row
        self.down: str | None = None
        self.restarts = 0
        self._pipe = threading.Lock()  # one user of the connection at a time (a batch, or close)
        self._spawn()
        self.queue = Batcher(self.call, window_s=window_s)

    def _spawn(self) -> None:
        self.conn, self.proc = self._launch()
        self.started_at = time.monotonic()
        self.ready = False
        self.synced: tuple[int, int] | None = None

    def _launch(self) -> tuple[Connection, BaseProcess]:
        """Start a worker process; its end of the pipe and the process."""
        ctx = mp.get_context("spawn")
        conn, child = ctx.Pipe()
        proc = ctx.Process(target=serve, args=(child, self.spec), daemon=True, name=f"paravt-replica-{self.index}")
        proc.start()
        child.close()
        return conn, proc

    def call(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        """Blocking round trip (in the queue's worker thread) within ``timeout_s``; never raises. Rows
        the worker did not answer, or that came while it was (re)starting, carry ``metrics["replica_lost"]``
        (the caller serves them elsewhere); rows whose reply was over the cap are plain errors."""
        t0 = time.perf_counter()
        with self._pipe:
            if not self.ready and self.down is None:
                self._take_ready()
            if self.down is not None or not self.ready:
                return [_lost(self.down or f"replica {self.index} is still starting (restarted)", t0) for _ in requests]
            watchdog = Watchdog(self.timeout_s, self.proc.kill)
            try:
                outs = self._round_trip(requests, t0)
            except (EOFError, OSError) as err:
                return self._pipe_failed(err, requests, t0, watchdog.stop())
            except Exception as err:  # noqa: BLE001 - e.g. a request that does not pickle
                self._drop(f"{type(err).__name__}: {err}")
                return [_lost(self.down or "replica is down", t0) for _ in requests]
            finally:
                watchdog.stop()
            if watchdog.stop() and self.down is None:  # fired after the reply was read: the reply stands
                self._restart(f"killed at its {self.timeout_s:g} s deadline just after it answered", [], t0)
            return outs

    def _pipe_failed(self, err: Exception, requests: Sequence[GenRequest], t0: float, hung: bool) -> list[GenOutput]:
        if hung:
            return self._restart(f"no answer within {self.timeout_s:g} s (model.replica_timeout_s); killed",
                                 requests, t0)
        if isinstance(err, OSError) and "bad message length" in str(err):
            cap = self.max_reply_bytes_per_row * len(requests)
            self._restart(f"a reply over {cap:,} bytes", [], t0)
            return [error_output(f"replica {self.index}'s reply for {len(requests)} rows exceeds "
                                 f"{cap:,} bytes ({self.max_reply_bytes_per_row:,} per row); lower "
                                 "max_new_tokens", time.perf_counter() - t0) for _ in requests]
        self._drop(self._exit_reason(err))
        return [_lost(self.down or "replica is down", t0) for _ in requests]

    def _round_trip(self, requests: Sequence[GenRequest], t0: float) -> list[GenOutput]:
        version = weights_version(self.model)
        if version != self.synced:
            self.conn.send(("weights", pack_weights(self.model)))
            self.synced = version
        self.conn.send(("generate", list(requests)))
        raw = self.conn.recv_bytes(maxlength=self.max_reply_bytes_per_row * max(1, len(requests)))
        kind, outputs = pickle.loads(raw)
        if kind == "outputs" and len(outputs) == len(requests):
            return list(outputs)
        self._drop(f"unexpected reply {kind!r} to {len(requests)} requests")
        return [_lost(self.down or "replica is down", t0) for _ in requests]

    def _restart(self, why: str, requests: Sequence[GenRequest], t0: float) -> list[GenOutput]:
        """Kill the worker and start a new one (ready in the background), or drop it after
        ``_MAX_RESTARTS``; ``requests`` come back as lost rows."""
        with contextlib.suppress(Exception):
            self.proc.kill()
        self.proc.join(timeout=5)
        self.conn.close()
        if self.restarts >= _MAX_RESTARTS:
            self._drop(f"{why} (after {self.restarts} restarts)")
        else:
            self.restarts += 1
            print(f"paravt: replica {self.index}: {why}; restarting it ({self.restarts}/{_MAX_RESTARTS}); "
                  "its rows are served by this process", file=sys.stderr)
            self._spawn()
        return [_lost(f"replica {self.index}: {why}", t0) for _ in requests]

    def _exit_reason(self, err: BaseException) -> str:
        self.proc.join(timeout=1.0)
        if self.proc.exitcode is not None:
            return f"its process exited with code {self.proc.exitcode} (its stderr has the traceback)"
        return f"{type(err).__name__} on the pipe: {err}"

    def serving(self) -> bool:
        """Up and started (never blocks): requests are routed to a replica only once it is."""
        if self.down is None and not self.ready and self._pipe.acquire(blocking=False):
            try:  # not while a batch (or a restart) holds the pipe
                self._take_ready()
            except (OSError, EOFError):
                return False
            finally:
                self._pipe.release()
        return self.ready and self.down is None

    def _take_ready(self) -> None:
        """The worker's "ready" if sent (never waits); no "ready" within ``_START_TIMEOUT_S``: dropped."""
        if not self.conn.poll(0):
            if time.monotonic() - self.started_at > _START_TIMEOUT_S:
                self._drop(f"no answer within {_START_TIMEOUT_S:g} s of starting")
            return
        try:
            kind, payload = self.conn.recv()
        except (EOFError, OSError) as err:
            self._drop(f"it exited while starting ({type(err).__name__})")
            return
        if kind != "ready":
            self._drop(f"it did not start: {payload}")
            return
        self.ready = True

    def _drop(self, why: str) -> None:
        if self.down is None:
            self.down = f"replica {self.index} is down: {why}"
            print(f"paravt: {self.down}; its requests go to the other engines", file=sys.stderr)
        if self.proc.is_alive():
            self.proc.kill()  # SIGKILL: a stopped (SIGSTOP) process ignores SIGTERM until resumed

    def close(self) -> None:
        if self.down is None:
            self.down = f"replica {self.index} was closed"
        if self.proc.is_alive() and self.ready and self._pipe.acquire(timeout=1.0):  # else: mid-batch
            try:
                self.conn.send(None)
            except OSError:
                pass
            finally:
                self._pipe.release()
            self.proc.join(timeout=10)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout=10)
        if self.proc.is_alive():  # stopped or hung: SIGTERM waits; multiprocessing's exit would join forever
            self.proc.kill()
            self.proc.join(timeout=10)
        self.conn.close()


class ReplicaGenerator:
    """``Generator`` over this process's ``HFGenerator`` and N − 1 replica processes."""

    def __init__(self, policy: LoadedPolicy, replicas: int, *, max_batch: int = 16, window_s: float = 0.005,
                 timeout_s: float = DEFAULT_TIMEOUT_S, max_reply_bytes_per_row: int = DEFAULT_MAX_REPLY_BYTES_PER_ROW,
                 share_prefill: bool = True, turn_cache_entries: int = 32, prefill_threads: int | None = None,
                 continuous: bool = False) -> None:
        if replicas < 2:
            raise ModelError(f"replicas={replicas}: a ReplicaGenerator needs at least 2 (1 is HFGenerator)")
        device = next(policy.model.parameters()).device
        if device.type != "cpu":
            raise ModelError(f"replicas={replicas} on {device}: replicas are for CPUs; use one process on an "
                             "accelerator (a batch of K rows costs about one row there)")
        if not policy.path:
            raise ModelError("replicas need the policy's checkpoint directory (LoadedPolicy.path) to start from")
        self.local = HFGenerator(policy, max_batch=max_batch, window_s=window_s, share_prefill=share_prefill,
                                 turn_cache_entries=turn_cache_entries, prefill_threads=prefill_threads,
                                 continuous=continuous)  # workers: the batch path (a batch per round trip)
        self.policy, self.model, self.codec = policy, policy.model, self.local.codec
        self.prefill_threads = prefill_threads
        dtype = str(next(policy.model.parameters()).dtype).removeprefix("torch.")
        spec = WorkerSpec(policy.path, "cpu", dtype, max(1, torch.get_num_threads() // replicas), prefill_threads,
                          max_batch, share_prefill, turn_cache_entries)
        self.remotes = [_Replica(i, spec, policy.model, window_s, timeout_s=timeout_s,
                                 max_reply_bytes_per_row=max_reply_bytes_per_row) for i in range(1, replicas)]
        self._finalizer = weakref.finalize(self, _close_all, self.remotes)  # workers end with this object
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
            done = await asyncio.gather(*(self._serve(e, [requests[i] for i in idx]) for e, idx in rows.items()))
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
                again = dict(zip(lost, await self._serve(0, [requests[i] for i in lost]), strict=True))
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


def _lost(why: str, t0: float) -> GenOutput:
    out = error_output(why, time.perf_counter() - t0)
    out.metrics["replica_lost"] = 1.0
    return out


def _close_all(remotes: list[_Replica]) -> None:
    for r in remotes:
        r.close()


def hf_generator(policy: LoadedPolicy, *, replicas: int = 1, prefill_threads: int | None = None,
                 replica_timeout_s: float = DEFAULT_TIMEOUT_S, continuous: bool = DEFAULT_CONTINUOUS
                 ) -> HFGenerator | ReplicaGenerator:
    """The hf backend of ``ModelConfig``: one process (``replicas=1``) or N replica processes;
    ``continuous``: this process's engine batches step by step (``paravt.models.hf.continuous``)."""
    if replicas == 1:
        return HFGenerator(policy, prefill_threads=prefill_threads, continuous=continuous)
    return ReplicaGenerator(policy, replicas, prefill_threads=prefill_threads, timeout_s=replica_timeout_s,
                            continuous=continuous)
