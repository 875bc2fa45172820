"""Policy replicas in worker processes (``paravt.models.hf.replicas``): the same outputs as one
process, requests of one conversation on one engine, weights that follow in-place updates, and a
dead or closed replica that loses no request."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import signal
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import torch

from paravt.errors import ModelError
from paravt.models.base import ChatMessage, GenOutput, GenRequest, SamplingParams
from paravt.models.hf import replica_handle
from paravt.models.hf.generator import HFGenerator
from paravt.models.hf.loading import LoadedPolicy, load_policy
from paravt.models.hf.replica_handle import Replica
from paravt.models.hf.replicas import ReplicaGenerator, hf_generator
from paravt.video.types import Frames


def _started(gen: ReplicaGenerator) -> ReplicaGenerator:
    assert gen.wait_started(timeout_s=120.0), [r.down for r in gen.remotes]
    return gen


@pytest.fixture(scope="module")
def policy(tiny_model_dir) -> LoadedPolicy:  # type: ignore[no-untyped-def]
    return load_policy(tiny_model_dir("qwen3_vl", "xs"))  # its own copy: a test updates its weights


@pytest.fixture(scope="module")
def replicas(policy: LoadedPolicy) -> Iterator[ReplicaGenerator]:
    gen = _started(ReplicaGenerator(policy, 2))
    yield gen
    gen.close()


def _window_request(
    gen: ReplicaGenerator | HFGenerator, frames: Frames, i: int, temperature: float
) -> GenRequest:
    msgs = (
        ChatMessage("system", "Summarise the window."),
        ChatMessage(
            "user", f"<video>\nWindow {i}: {10 * i}-{10 * i + 8} s. What happens?", videos=(frames,)
        ),
    )
    enc = gen.codec.encode_messages(msgs)
    return GenRequest(
        enc.ids + gen.codec.generation_prompt(""),
        msgs,
        enc.videos,
        sampling=SamplingParams(temperature=temperature, max_new_tokens=10, seed=100 + i),
    )


def _same(a: list[GenOutput], b: list[GenOutput]) -> None:
    assert [o.finish_reason for o in a] == [o.finish_reason for o in b] and "error" not in {
        o.finish_reason for o in a
    }
    assert [o.token_ids for o in a] == [o.token_ids for o in b]
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.logprobs, y.logprobs, atol=1e-4)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_replicas_give_the_outputs_of_one_process(
    replicas, policy, video_frames, temperature
) -> None:
    reqs = [_window_request(replicas, video_frames, i, temperature) for i in range(4)]
    split = asyncio.run(replicas.generate(reqs))
    assert {o.metrics["replica"] for o in split} == {
        0.0,
        1.0,
    }  # the K sub-agents went to both engines
    _same(split, HFGenerator(policy).run_batch(reqs))


def test_rollouts_spread_and_each_next_turn_follows_its_kept_cache(replicas, video_frames) -> None:
    """G rollouts of one prompt (each its own call, as run_group makes them) spread over the
    engines; the next turn of each goes to the engine that kept its KV cache, and runs only its new
    tokens."""
    base = _window_request(replicas, video_frames, 0, 1.0)
    turn1 = [replace(base, keep_kv=True, sampling=replace(base.sampling, seed=s)) for s in range(4)]

    async def group(reqs: list[GenRequest]) -> list[GenOutput]:
        return [
            o
            for outs in await asyncio.gather(*(replicas.generate([r]) for r in reqs))
            for o in outs
        ]

    first = asyncio.run(group(turn1))
    assert {o.metrics["replica"] for o in first} == {0.0, 1.0}
    turn2 = [
        replace(r, prompt_ids=r.prompt_ids + o.token_ids + (11, 12), keep_kv=False)
        for r, o in zip(turn1, first)
    ]
    second = asyncio.run(group(list(reversed(turn2))))[::-1]
    assert [o.metrics["replica"] for o in second] == [o.metrics["replica"] for o in first]
    assert all(o.metrics["prefill_tokens"] <= 3 for o in second)  # the kept cache was used


def test_weights_follow_in_place_updates(replicas, policy, video_frames) -> None:
    req = _window_request(replicas, video_frames, 2, 1.0)
    remote = replicas.remotes[0]
    _same(remote.call([req]), replicas.local.run_batch([req]))
    before = remote.call([req])
    with torch.no_grad():  # an optimizer step changes parameters in place
        for p in policy.model.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    after = remote.call([req])
    assert after[0].token_ids != before[0].token_ids
    _same(after, replicas.local.run_batch([req]))
    head = policy.model.get_output_embeddings()
    head.weight = torch.nn.Parameter(
        head.weight.detach() * -1.0
    )  # a replaced parameter, not an in-place write
    _same(remote.call([req]), replicas.local.run_batch([req]))


def test_rows_in_flight_are_uncounted_when_a_call_is_cancelled(replicas, video_frames) -> None:
    async def cancelled() -> None:
        task = asyncio.ensure_future(
            replicas.generate([_window_request(replicas, video_frames, i, 0.0) for i in range(4)])
        )
        await asyncio.sleep(0)  # routed and counted, the engines' tasks not started yet
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    assert replicas._in_flight == [0, 0]


def test_a_dead_replica_loses_no_request(policy, video_frames, capsys) -> None:
    gen = _started(ReplicaGenerator(policy, 2))
    gen.remotes[0].proc.kill()
    gen.remotes[0].proc.join(timeout=10)
    reqs = [_window_request(gen, video_frames, i, 0.0) for i in range(4)]
    outs = asyncio.run(gen.generate(reqs))
    _same(outs, gen.local.run_batch(reqs))
    assert "replica 1 is down" in capsys.readouterr().err
    assert (
        asyncio.run(gen.generate(reqs[:1]))[0].metrics["replica"] == 0.0
    )  # not routed there again
    gen.close()


def test_close_stops_the_workers_and_serving_goes_on(policy, video_frames) -> None:
    gen = _started(ReplicaGenerator(policy, 2))
    proc = gen.remotes[0].proc
    asyncio.run(gen.aclose())
    assert not proc.is_alive()
    outs = asyncio.run(gen.generate([_window_request(gen, video_frames, i, 0.0) for i in range(2)]))
    assert {o.metrics["replica"] for o in outs} == {0.0} and "error" not in {
        o.finish_reason for o in outs
    }


def test_replicas_are_for_a_cpu_and_a_checkpoint_directory(policy) -> None:
    assert isinstance(hf_generator(policy), HFGenerator)
    with pytest.raises(ModelError, match="at least 2"):
        ReplicaGenerator(policy, 1)
    with pytest.raises(ModelError, match="checkpoint directory"):
        ReplicaGenerator(
            LoadedPolicy(policy.model, policy.processor, policy.tokenizer, policy.family, path=""),
            2,
        )


@pytest.fixture(scope="module")
def fragile(policy: LoadedPolicy) -> Iterator[ReplicaGenerator]:
    gen = _started(ReplicaGenerator(policy, 2, timeout_s=3.0))
    yield gen
    gen.close()


def test_a_stopped_replica_is_killed_at_its_deadline_and_its_rows_served_here(
    fragile, video_frames, capsys
) -> None:
    """Issue 28 item 6: SIGSTOP on a worker used to hang the call forever (the pipe read had no
    deadline); now the watchdog kills it at timeout_s, its rows are served by this process with
    the outputs one process gives, and a fresh worker is started."""
    reqs = [_window_request(fragile, video_frames, i, 0.0) for i in range(4)]
    remote = fragile.remotes[0]
    remote.call(reqs[:1])  # weights synced: the stop lands in a generate round trip
    stopped = remote.proc
    os.kill(stopped.pid, signal.SIGSTOP)
    t0 = time.monotonic()
    outs = asyncio.run(fragile.generate(reqs))
    elapsed = time.monotonic() - t0
    _same(outs, fragile.local.run_batch(reqs))
    assert elapsed < 3.0 + 20.0, elapsed  # the deadline plus serving 4 rows here
    stopped.join(timeout=5)
    assert (
        stopped.exitcode == -signal.SIGKILL and remote.restarts == 1 and remote.proc is not stopped
    )
    assert "no answer within 3 s" in capsys.readouterr().err
    assert fragile.wait_started(timeout_s=120.0)  # the restarted worker serves again
    assert remote.call(reqs[:1])[0].finish_reason != "error"


def test_a_replica_reply_over_its_cap_is_an_error_per_row(fragile, video_frames) -> None:
    """Issue 28 item 7: a reply larger than max_reply_bytes_per_row × rows is not unpickled: each
    of its rows gets an error naming the cap (not retried here), and the worker is restarted."""
    assert fragile.wait_started(timeout_s=120.0)
    remote = fragile.remotes[0]
    reqs = [_window_request(fragile, video_frames, i, 0.0) for i in range(2)]
    restarts, cap = remote.restarts, remote.max_reply_bytes_per_row
    remote.max_reply_bytes_per_row = 64
    try:
        outs = remote.call(reqs)
    finally:
        remote.max_reply_bytes_per_row = cap
    assert [o.finish_reason for o in outs] == ["error", "error"]
    assert all(
        "exceeds 128 bytes (64 per row)" in (o.error or "") and not o.metrics.get("replica_lost")
        for o in outs
    )
    assert remote.restarts == restarts + 1


class _FakeProc:
    """A stand-in worker process: records kills (no process is started)."""

    def __init__(self) -> None:
        self.killed, self.exitcode, self.pid = False, None, 0

    def kill(self) -> None:
        self.killed = True

    terminate = kill

    def join(self, timeout: float | None = None) -> None:
        pass

    def is_alive(self) -> bool:
        return not self.killed


class _FakeReplica(Replica):
    """A `Replica` whose workers are `_FakeProc`s on a real pipe (the test holds the other end);
    ``reply_after_s``: how long the round trip takes before it returns its (good) outputs."""

    def __init__(self, timeout_s: float, reply_after_s: float) -> None:
        self.launched: list[tuple[Any, _FakeProc]] = []  # (worker end, process) per start
        self.reply_after_s = reply_after_s
        super().__init__(1, None, None, 0.0, timeout_s=timeout_s)  # type: ignore[arg-type]

    def _launch(self) -> tuple[Any, Any]:
        conn, worker_end = mp.Pipe()
        proc = _FakeProc()
        self.launched.append((worker_end, proc))
        return conn, proc

    def _round_trip(self, requests: Sequence[GenRequest], t0: float) -> list[GenOutput]:
        time.sleep(self.reply_after_s)
        return [
            GenOutput(token_ids=(1,), logprobs=(0.0,), text="ok", finish_reason="stop")
            for _ in requests
        ]


def _fake_request() -> GenRequest:
    return GenRequest((1, 2, 3), (ChatMessage("user", "hi"),), ())


def test_a_watchdog_firing_just_after_the_reply_restarts_the_worker_it_killed(capsys) -> None:
    """The reply was read, then the deadline passed before the watchdog was disarmed: it SIGKILLed
    the worker. The reply stands, and the worker is restarted (it used to stay dead, so the next
    batch failed on the pipe and the replica was dropped for good)."""
    rep = _FakeReplica(timeout_s=0.2, reply_after_s=0.5)
    rep.launched[0][0].send(("ready", None))
    outs = rep.call([_fake_request()])
    assert [o.text for o in outs] == ["ok"] and not outs[0].metrics.get("replica_lost")
    assert rep.launched[0][1].killed and rep.restarts == 1 and len(rep.launched) == 2
    assert rep.down is None and rep.proc is rep.launched[1][1] and not rep.proc.killed
    assert "just after it answered" in capsys.readouterr().err


def test_a_batch_queued_for_a_restarting_worker_is_handed_back_at_once(monkeypatch) -> None:
    """After a restart, a batch queued for the worker used to wait for its "ready" up to
    _START_TIMEOUT_S (300 s), outside replica_timeout_s; now its rows come back lost at once (this
    process serves them), the worker serves once it is ready, and one that never starts is
    dropped."""
    monkeypatch.setattr(replica_handle, "_START_TIMEOUT_S", 2.0)
    rep = _FakeReplica(timeout_s=60.0, reply_after_s=0.0)  # restarted: no "ready" yet
    t0 = time.monotonic()
    outs = rep.call([_fake_request(), _fake_request()])
    assert time.monotonic() - t0 < 1.0 and rep.down is None
    assert all(o.metrics.get("replica_lost") and "still starting" in (o.error or "") for o in outs)
    rep.launched[0][0].send(("ready", None))
    assert rep.serving() and [o.text for o in rep.call([_fake_request()])] == ["ok"]
    late = _FakeReplica(timeout_s=60.0, reply_after_s=0.0)
    late.started_at -= 3.0  # its start began past _START_TIMEOUT_S ago
    assert not late.serving() and "no answer within 2 s of starting" in (late.down or "")


def test_the_replica_timeout_default_is_the_configs() -> None:
    """One source of truth: every signature that takes the replica timeout defaults to
    ``ModelConfig.replica_timeout_s`` (literal 600.0 copies used to drift from it); the builders
    (paravt.agent.backend, PolicySession.create) take the ModelConfig itself."""
    import inspect

    from paravt.config import ModelConfig

    want = ModelConfig().replica_timeout_s
    params = [
        (hf_generator, "replica_timeout_s"),
        (ReplicaGenerator, "timeout_s"),
        (Replica, "timeout_s"),
    ]
    assert {f.__qualname__: inspect.signature(f).parameters[p].default for f, p in params} == {
        f.__qualname__: want for f, _ in params
    }
