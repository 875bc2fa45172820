"""`paravt.runlock`: one writer per output directory, with real processes holding the lock."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from paravt import runlock
from paravt.errors import ParavtError

HOLD = """
import sys, time
from paravt import runlock
with runlock.hold(sys.argv[1], "holder-test"):
    print("held", flush=True)
    time.sleep(30)
"""


def holder(out: Path) -> subprocess.Popen:
    """A real process that takes ``out``'s lock and sleeps (killed by the test)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_is_refused_naming_the_holder(tmp_path: Path) -> None:
    proc = holder(tmp_path)
    try:
        with pytest.raises(
            runlock.OutputLocked, match=rf"pid {proc.pid} on .* since .*holder-test"
        ) as err:
            runlock.acquire(tmp_path, "second")
        assert isinstance(err.value, ParavtError) and str(tmp_path / runlock.LOCK_NAME) in str(
            err.value
        )
    finally:
        proc.terminate()
        proc.wait(10)
    me = runlock.acquire(tmp_path, "after")  # a holder that ended cleanly removed its lock
    runlock.release(tmp_path, me)
    assert not (tmp_path / runlock.LOCK_NAME).exists()


def test_a_stale_lock_of_a_killed_run_is_taken_over_with_a_notice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    proc = holder(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)  # no cleanup: the lock file stays
    proc.wait(10)
    assert (tmp_path / runlock.LOCK_NAME).exists()
    with caplog.at_level(logging.WARNING, logger="paravt.runlock"):
        with runlock.hold(tmp_path, "resumed") as me:
            assert me.pid == os.getpid()
            assert runlock._read(tmp_path / runlock.LOCK_NAME) == me
    assert f"taking over a stale lock (pid {proc.pid}" in caplog.text
    assert not (tmp_path / runlock.LOCK_NAME).exists()


def test_racing_takeovers_of_one_stale_lock_leave_exactly_one_holder(tmp_path: Path) -> None:
    proc = holder(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    race = """
import sys
from paravt import runlock
from paravt.errors import ParavtError
print("ready", flush=True)
sys.stdin.readline()  # "go": all racers start together
try:
    runlock.acquire(sys.argv[1], "racer")
    print("won", flush=True)
except ParavtError:
    print("refused", flush=True)
sys.stdin.readline()  # the winner holds the lock until the test has every answer
"""
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", race, str(tmp_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for r in racers:
        assert r.stdout is not None and r.stdout.readline().strip() == "ready"
    for r in racers:
        assert r.stdin is not None
        r.stdin.write("go\n")
        r.stdin.flush()
    outs = [r.stdout.readline().strip() for r in racers if r.stdout is not None]
    for r in racers:
        r.communicate("end\n", timeout=20)
    assert sorted(outs) == ["refused", "refused", "refused", "won"]


def test_a_lock_from_another_host_is_never_taken_over(tmp_path: Path) -> None:
    (tmp_path / runlock.LOCK_NAME).write_text(
        '{"pid": 1, "host": "elsewhere", "since": 0, "command": "x", "token": "t"}'
    )
    with pytest.raises(runlock.OutputLocked, match="pid 1 on elsewhere"):
        runlock.acquire(tmp_path, "here")


def test_a_lock_that_cannot_be_read_is_held_and_a_corrupt_one_is_taken_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EACCES (another user's lock: the test runs as root, so the read is made to fail) says nothing
    about its holder: the run is refused and the file kept. Only a lock that reads but does not
    parse is corrupt, and taken over."""
    lock = tmp_path / runlock.LOCK_NAME
    lock.write_text('{"pid": 1, "host": "h", "since": 0, "command": "other user", "token": "t"}')
    read_text = Path.read_text

    def denied(self: Path, *args: object, **kwargs: object) -> str:
        if self == lock:
            raise PermissionError(13, "Permission denied", str(self))
        return read_text(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", denied)
    with pytest.raises(runlock.OutputLocked, match="cannot be read.*Permission denied") as err:
        runlock.acquire(tmp_path, "here")
    assert str(lock) in str(err.value)
    monkeypatch.undo()
    assert "other user" in lock.read_text()  # still there, untouched
    lock.write_text('{"pid": 1, "host"')  # cut off: corrupt
    with runlock.hold(tmp_path, "here") as me:
        assert runlock._read(lock) == me
