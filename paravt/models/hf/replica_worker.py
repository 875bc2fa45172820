"""The process side of a policy replica (``paravt.models.hf.replicas``).

A spawned process loads the policy from its checkpoint directory, builds its own ``HFGenerator``
and answers messages on a pipe until it gets ``None`` or the pipe closes:

* ``("weights", packed)``: copy these parameters into the model (``pack_weights`` format); no reply;
* ``("generate", requests)``: reply ``("outputs", [GenOutput, ...])``, in request order.

It first sends ``("ready", pid)``, or ``("failed", message)`` when the policy does not load.
``Watchdog``: the parent's deadline of one round trip.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import torch

Packed = dict[str, tuple[str, tuple[int, ...], np.ndarray]]  # name: (dtype, shape, raw bytes)


@dataclass(frozen=True)
class WorkerSpec:
    path: (
        str  # checkpoint directory the replica loads (its weights are then synced from the parent)
    )
    device: str
    dtype: str
    threads: int  # torch intra-op threads of the process
    prefill_threads: int | None
    max_batch: int
    share_prefill: bool
    turn_cache_entries: int


def pack_weights(model: Any) -> Packed:
    """Every parameter and persistent buffer as raw bytes (any dtype, bfloat16 included)."""
    out: Packed = {}
    for name, t in model.state_dict().items():
        flat = t.detach().to("cpu").contiguous().reshape(-1)
        out[name] = (
            str(t.dtype).removeprefix("torch."),
            tuple(t.shape),
            flat.view(torch.uint8).numpy().copy(),
        )
    return out


def load_packed(model: Any, packed: Packed) -> None:
    device = next(model.parameters()).device
    state = {
        name: torch.from_numpy(raw).view(getattr(torch, dtype)).reshape(shape).to(device)
        for name, (dtype, shape, raw) in packed.items()
    }
    model.load_state_dict(state, strict=True)


def serve(conn: Connection, spec: WorkerSpec) -> None:
    """Main of a replica process (see the module docstring)."""
    torch.set_num_threads(spec.threads)
    from transformers.utils import logging as hf_logging

    # a worker's load bars would interleave with the parent's rich output
    hf_logging.disable_progress_bar()
    try:
        from paravt.models.hf.generator import HFGenerator
        from paravt.models.hf.loading import load_policy

        policy = load_policy(spec.path, device=spec.device, dtype=spec.dtype)
        gen = HFGenerator(
            policy,
            max_batch=spec.max_batch,
            window_s=0.0,
            share_prefill=spec.share_prefill,
            turn_cache_entries=spec.turn_cache_entries,
            prefill_threads=spec.prefill_threads,
        )
    except Exception as err:  # noqa: BLE001 - reported to the parent, which serves without this replica
        conn.send(("failed", f"{type(err).__name__}: {err}"))
        return
    conn.send(("ready", os.getpid()))
    loop = asyncio.new_event_loop()
    try:
        while True:
            try:
                msg = conn.recv()
            except EOFError:
                return
            if msg is None:
                return
            kind, payload = msg
            if kind == "weights":
                load_packed(policy.model, payload)
            elif kind == "generate":
                conn.send(("outputs", loop.run_until_complete(gen.generate(payload))))
    finally:
        loop.close()


class Watchdog:
    """A round trip's deadline: past ``timeout_s`` it SIGKILLs the worker (``kill``: ends a blocked
    send/recv). ``stop`` (idempotent) disarms it for good and says whether it fired."""

    def __init__(self, timeout_s: float, kill: Callable[[], None]) -> None:
        self._kill, self._lock, self._over, self._fired = kill, threading.Lock(), False, False
        self._timer = threading.Timer(timeout_s, self._fire)
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._over:
                return
            self._fired = True
            with contextlib.suppress(Exception):
                self._kill()

    def stop(self) -> bool:
        self._timer.cancel()
        with self._lock:
            self._over = True
            return self._fired
