"""Issue 34 item 6: one writer per `paravt repro --out` from its first stage, and a bounded wait
on another run's lock (the shared base builder's) that names the holder."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from paravt import runlock
from paravt.config import TrainConfig
from paravt.repro.bases import ensure_base


def _hold_as(d: Path, pid: int, command: str) -> None:
    """A lock file in ``d`` naming ``pid`` on this host as its holder (what a live run writes)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / runlock.LOCK_NAME).write_text(
        json.dumps(
            {
                "pid": pid,
                "host": socket.gethostname(),
                "since": time.time(),
                "command": command,
                "token": f"t{pid}",
            }
        )
    )


@pytest.fixture
def stopped() -> Iterator[int]:
    """A live process that makes no progress (SIGSTOP: what a stopped base builder is)."""
    proc = subprocess.Popen(["sleep", "60"])
    os.kill(proc.pid, signal.SIGSTOP)
    yield proc.pid
    proc.kill()
    proc.wait()


def test_a_second_repro_on_the_same_out_is_refused_before_any_stage(tmp_path: Path) -> None:
    """Before: it ran checkpoint selection beside the first and was refused 24 s later, at the
    eval."""
    out = tmp_path / "repro"
    _hold_as(out, os.getpid(), "paravt repro")  # this test process: alive
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "paravt", "repro", "--preset", "micro", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert (
        len(lines) == 1 and f"pid {os.getpid()}" in lines[0] and "Traceback" not in proc.stderr
    ), proc.stderr
    assert not (out / "synth").exists()  # no stage started
    assert time.monotonic() - t0 < 60


def test_the_wait_on_a_stopped_holder_is_bounded_and_names_it(tmp_path: Path, stopped: int) -> None:
    _hold_as(tmp_path, stopped, "paravt repro: base strong")
    t0 = time.monotonic()
    with pytest.raises(
        runlock.OutputLocked, match=rf"pid {stopped} .*paravt repro: base strong.*lock_wait_s"
    ):
        runlock.acquire_waiting(tmp_path, "second", wait_s=0.6, poll_s=0.1)
    assert 0.5 < time.monotonic() - t0 < 5


def test_the_base_builder_wait_uses_the_config_bound(tmp_path: Path, stopped: int) -> None:
    """`ensure_base` waited without a limit on a stopped builder; now `lock_wait_s`, then one
    error."""
    _hold_as(tmp_path, stopped, "paravt repro: base strong")
    cfg = TrainConfig(lock_wait_s=0.4)
    t0 = time.monotonic()
    with pytest.raises(runlock.OutputLocked, match=f"pid {stopped}"):
        ensure_base(tmp_path, cfg, {}, "strong")
    assert time.monotonic() - t0 < 10
    assert sorted(p.name for p in tmp_path.iterdir()) == [runlock.LOCK_NAME]  # nothing built


def test_a_holder_that_works_is_waited_for_past_the_bound(tmp_path: Path) -> None:
    """A live builder burning CPU is progress: the wait goes on past ``wait_s`` and the lock is
    taken once that run has ended (its lock left stale, as a killed or finished run's)."""
    busy = subprocess.Popen(
        [sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 2.0: pass"]
    )
    threading.Thread(target=busy.wait, daemon=True).start()  # reaped when it ends, as a shell would
    try:
        _hold_as(tmp_path, busy.pid, "busy builder")
        t0 = time.monotonic()
        me = runlock.acquire_waiting(tmp_path, "second", wait_s=0.8, poll_s=0.1)
        assert time.monotonic() - t0 > 1.2 and me.pid == os.getpid()
    finally:
        busy.kill()
        busy.wait()
