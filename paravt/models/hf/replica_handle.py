"""The parent's handle on one replica process (``paravt.models.hf.replicas``): start it, send it a
batch within a deadline and read the reply under a size cap, restart it (at most ``_MAX_RESTARTS``
times) or drop it, close it. Never raises: rows it cannot answer come back as ``lost_output`` rows
(``metrics["replica_lost"]``) that the caller serves elsewhere."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import pickle
import sys
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from paravt.config import ModelConfig
from paravt.models.base import GenOutput, GenRequest, error_output
from paravt.models.hf.batching import Batcher
from paravt.models.hf.replica_worker import Watchdog, WorkerSpec, pack_weights, serve
from paravt.models.hf.turn_cache import weights_version

_START_TIMEOUT_S = 300.0
_MAX_RESTARTS = 2
DEFAULT_TIMEOUT_S: float = ModelConfig.model_fields[
    "replica_timeout_s"
].default  # written once, in config
DEFAULT_MAX_REPLY_BYTES_PER_ROW = 16 << 20


class Replica:
    """One worker process and the queue of requests it serves."""

    def __init__(
        self,
        index: int,
        spec: WorkerSpec,
        model: Any,
        window_s: float,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_reply_bytes_per_row: int = DEFAULT_MAX_REPLY_BYTES_PER_ROW,
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
        proc = ctx.Process(
            target=serve, args=(child, self.spec), daemon=True, name=f"paravt-replica-{self.index}"
        )
        proc.start()
        child.close()
        return conn, proc

    def call(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        """Blocking round trip (in the queue's worker thread) within ``timeout_s``; never raises.
        Rows the worker did not answer, or that came while it was (re)starting, carry
        ``metrics["replica_lost"]``
        (the caller serves them elsewhere); rows whose reply was over the cap are plain errors."""
        t0 = time.perf_counter()
        with self._pipe:
            if not self.ready and self.down is None:
                self._take_ready()
            if self.down is not None or not self.ready:
                return [
                    lost_output(
                        self.down or f"replica {self.index} is still starting (restarted)", t0
                    )
                    for _ in requests
                ]
            watchdog = Watchdog(self.timeout_s, self.proc.kill)
            try:
                outs = self._round_trip(requests, t0)
            except (EOFError, OSError) as err:
                return self._pipe_failed(err, requests, t0, watchdog.stop())
            except Exception as err:  # noqa: BLE001 - e.g. a request that does not pickle
                self._drop(f"{type(err).__name__}: {err}")
                return [lost_output(self.down or "replica is down", t0) for _ in requests]
            finally:
                watchdog.stop()
            if (
                watchdog.stop() and self.down is None
            ):  # fired after the reply was read: the reply stands
                self._restart(
                    f"killed at its {self.timeout_s:g} s deadline just after it answered", [], t0
                )
            return outs

    def _pipe_failed(
        self, err: Exception, requests: Sequence[GenRequest], t0: float, hung: bool
    ) -> list[GenOutput]:
        if hung:
            return self._restart(
                f"no answer within {self.timeout_s:g} s (model.replica_timeout_s); killed",
                requests,
                t0,
            )
        if isinstance(err, OSError) and "bad message length" in str(err):
            cap = self.max_reply_bytes_per_row * len(requests)
            self._restart(f"a reply over {cap:,} bytes", [], t0)
            return [
                error_output(
                    f"replica {self.index}'s reply for {len(requests)} rows exceeds "
                    f"{cap:,} bytes ({self.max_reply_bytes_per_row:,} per row); lower "
                    "max_new_tokens",
                    time.perf_counter() - t0,
                )
                for _ in requests
            ]
        self._drop(self._exit_reason(err))
        return [lost_output(self.down or "replica is down", t0) for _ in requests]

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
        return [lost_output(self.down or "replica is down", t0) for _ in requests]

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
            print(
                f"paravt: replica {self.index}: {why}; restarting it "
                f"({self.restarts}/{_MAX_RESTARTS}); "
                "its rows are served by this process",
                file=sys.stderr,
            )
            self._spawn()
        return [lost_output(f"replica {self.index}: {why}", t0) for _ in requests]

    def _exit_reason(self, err: BaseException) -> str:
        self.proc.join(timeout=1.0)
        if self.proc.exitcode is not None:
            return (
                f"its process exited with code {self.proc.exitcode} (its stderr has the traceback)"
            )
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
        """The worker's "ready" if sent (never waits); no "ready" within ``_START_TIMEOUT_S``:
        dropped."""
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
        if (
            self.proc.is_alive() and self.ready and self._pipe.acquire(timeout=1.0)
        ):  # else: mid-batch
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
        if (
            self.proc.is_alive()
        ):  # stopped or hung: SIGTERM waits; multiprocessing's exit would join forever
            self.proc.kill()
            self.proc.join(timeout=10)
        self.conn.close()


def lost_output(why: str, t0: float) -> GenOutput:
    out = error_output(why, time.perf_counter() - t0)
    out.metrics["replica_lost"] = 1.0
    return out
