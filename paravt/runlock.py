"""One writer per output directory: ``OUT/.paravt.lock``.

A run that writes into ``OUT`` (`paravt eval --out`, `paravt data distill --out`, a trainer's
``out_dir``) holds the lock for as long as it writes. The lock file is created atomically and
whole (written aside, then hard-linked into place: ``link`` fails like ``O_EXCL`` if it exists) and
holds the holder's pid, host, start time and command. A second run on
the same directory raises `OutputLocked`, naming the holder; a lock whose holder is dead (a pid
that no longer exists on THIS host: a killed run) is stale and is taken over with a one-line
warning, and so is a lock file that reads but does not parse (corrupt). A lock held from another
host is never taken over (its pid cannot be checked here), nor one that cannot be read (EACCES:
another user's run, whose pid cannot be read either): delete the file by hand once that run has
ended.

Taking over a stale lock happens under an ``flock`` on the directory, so two runs that find
the same stale lock cannot both take it. A run that must wait for another's lock (`paravt repro`'s
shared base builder) uses `acquire_waiting`: bounded by a time without progress from the holder
(config ``lock_wait_s``), then `OutputLocked` naming it. Stdlib only: a bottom-layer module.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from paravt.errors import ParavtError, disk_write

log = logging.getLogger(__name__)
LOCK_NAME = ".paravt.lock"


class OutputLocked(ParavtError):
    """Another live run holds the output directory's lock (``holder``: who, when the file reads)."""

    def __init__(self, message: str, holder: Holder | None = None) -> None:
        super().__init__(message)
        self.holder = holder


@dataclass(frozen=True)
class Holder:
    """Who holds a lock (what the lock file says)."""

    pid: int
    host: str
    since: float  # time.time() when the lock was taken
    command: str
    token: str  # unique per acquisition: release removes only its own file

    def describe(self) -> str:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return f"pid {self.pid} on {self.host} since {started} ({self.command})"


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def _read(path: Path) -> Holder | None:
    """The holder written in ``path``; None when the file is gone or does not parse (corrupt).
    Any other OSError (EACCES: another user's lock) propagates: it says nothing about the holder."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        d = json.loads(text)
        return Holder(
            int(d["pid"]),
            str(d["host"]),
            float(d["since"]),
            str(d.get("command", "?")),
            str(d["token"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


def _read_held(path: Path) -> Holder | None:
    """`_read`, with a lock that cannot be read reported as held (`OutputLocked`), never as
    stale."""
    try:
        return _read(path)
    except OSError as err:
        raise OutputLocked(
            f"{path.parent} may be being written by another run: its lock {path} cannot be read "
            f"({err.strerror or err}), so its holder cannot be checked; if that run is gone, "
            f"delete {path} "
            "(as its owner), or pick another output directory"
        ) from None


def _create(path: Path, holder: Holder) -> bool:
    """Create the lock file with ``holder`` in it, atomically and whole (written to a private
    file, then hard-linked into place: ``link`` fails if the name exists, like ``O_EXCL``, and
    the lock is never seen half-written); False when it already exists."""
    tmp = path.with_name(f"{path.name}.{holder.token}")
    kept = f"nothing: no lock was taken and the partial {tmp.name} was removed"
    try:
        with disk_write(path, "the lock of the output directory", kept), tmp.open("w") as f:
            json.dump(
                {
                    "pid": holder.pid,
                    "host": holder.host,
                    "since": holder.since,
                    "command": holder.command,
                    "token": holder.token,
                },
                f,
            )
            f.flush()
            os.fsync(f.fileno())
    except BaseException:  # a full disk, a refused write, an interrupt: no 0-byte file left behind
        tmp.unlink(missing_ok=True)
        raise
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    return True


def _is_stale(h: Holder | None) -> bool:
    """A holder that is dead on this host, or a lock file that does not parse (corrupt)."""
    if h is None:
        return True
    return h.host == socket.gethostname() and not _pid_alive(h.pid)


def _take_over(path: Path, me: Holder) -> Holder | None:
    """Under an flock on the directory: if the lock is (still) stale, replace it with ``me``.
    Returns None when ``me`` now holds it, else the live holder found (``me`` itself if the file
    vanished in between: the caller tries again)."""
    guard = os.open(path.parent, os.O_RDONLY)  # flock on the directory itself: no extra file
    try:
        fcntl.flock(guard, fcntl.LOCK_EX)
        found = _read_held(path)
        if path.exists() and not _is_stale(found):
            return found
        if path.exists():
            log.warning(
                "%s: taking over a stale lock (%s: that process is gone)",
                path.parent,
                found.describe() if found else "a lock file that does not parse",
            )
            path.unlink(missing_ok=True)
        return None if _create(path, me) else (_read_held(path) or me)
    finally:
        os.close(guard)  # closing the descriptor releases the flock


def acquire(out_dir: str | Path, command: str) -> Holder:
    """Take ``out_dir``'s lock for this process; `OutputLocked` naming the holder if a live run has
    it."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    path = d / LOCK_NAME
    me = Holder(os.getpid(), socket.gethostname(), time.time(), command, uuid.uuid4().hex)
    for _ in range(3):
        if _create(path, me):
            return me
        other = _take_over(path, me)
        if other is None:
            return me
        if other.token != me.token:
            raise OutputLocked(
                f"{d} is being written by another run: {other.describe()}; one writer per output "
                "directory. "
                "Wait for it to end, pick another output directory, or, if that run is gone, "
                f"delete {path}",
                other,
            )
    raise OutputLocked(
        f"{d}: its lock {path} kept changing hands while this run tried to take it; "
        "another run is starting there: wait for it or pick another output directory"
    )


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) a process of THIS host has used so far, from ``/proc`` (Linux);
    None when it cannot be read. A stopped or hung process's does not grow."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[
        2
    ].split()  # after "pid (comm)": state is field 3, utime/stime 14/15
    try:
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (IndexError, ValueError, OSError):
        return None


def acquire_waiting(
    out_dir: str | Path, command: str, *, wait_s: float, poll_s: float = 5.0
) -> Holder:
    """`acquire`, waiting while another live run holds the lock, for at most ``wait_s`` seconds
    in which the holder makes no progress (its CPU time, read on this host, does not grow: a
    stopped or hung run; a holder on another host gets ``wait_s`` in all). Then `OutputLocked`
    naming the holder. Said once on stderr when the wait starts."""
    last: tuple[str, float | None] | None = None
    idle_since = time.monotonic()
    while True:
        try:
            return acquire(out_dir, command)
        except OutputLocked as held:
            h, now = held.holder, time.monotonic()
            if h is None:
                raise
            seen = (h.token, cpu_seconds(h.pid) if h.host == socket.gethostname() else None)
            if last is None:
                log.warning(
                    "waiting for the run holding %s (at most %g s without progress from it): %s",
                    out_dir,
                    wait_s,
                    h.describe(),
                )
            elif seen != last and seen[1] is not None:
                idle_since = now  # another holder, or the same one working
            last = seen
            if now - idle_since >= wait_s:
                raise OutputLocked(
                    f"{out_dir}: waited {now - idle_since:.0f} s for the run holding its lock, "
                    "which made no "
                    f"progress (lock_wait_s={wait_s:g}): {h.describe()}; if that run is stopped "
                    "or hung, end it "
                    f"(kill {h.pid}) and start again, or raise lock_wait_s",
                    h,
                ) from None
            time.sleep(max(0.0, min(poll_s, wait_s - (now - idle_since))))


def release(out_dir: str | Path, me: Holder) -> None:
    """Remove ``out_dir``'s lock if it is still ``me``'s (never another run's)."""
    path = Path(out_dir) / LOCK_NAME
    try:
        h = _read(path)
    except OSError:
        return  # not readable: not provably ours, so left alone
    if h is not None and h.token == me.token:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def hold(out_dir: str | Path, command: str | None = None) -> Iterator[Holder]:
    """``with hold(out):`` — the lock for the body's duration (released on any exit)."""
    me = acquire(out_dir, command or " ".join(sys.argv[:3]) or "paravt")
    try:
        yield me
    finally:
        release(out_dir, me)
