"""Run an inference server in the foreground: stream its log, say when it answers, stop it.

``supervise`` starts the command in its own process group, passes its output through (keeping the
last lines), polls ``GET {url}/models`` and prints ONE ready line once it answers 200. It returns
the exit code for ``paravt serve-model``: non-zero with the server's last log lines on stderr when
the server exits or does not answer within ``ready_timeout_s``; 128 + signal number after SIGINT /
SIGTERM. Whatever happens, the server's whole process tree (API server, engine core, workers) is
stopped: SIGTERM, then SIGKILL after ``grace_s`` (a vLLM engine stuck in start-up ignores SIGTERM).
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TextIO

import httpx


class _Stop(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _children(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (read from /proc; empty where there is none)."""
    parents: dict[int, list[int]] = collections.defaultdict(list)
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents[ppid].append(int(entry))
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def stop_tree(proc: subprocess.Popen, grace_s: float = 15.0) -> None:
    """SIGTERM the server's process group and descendants; SIGKILL whatever is left after
    grace_s."""
    pids = [proc.pid, *_children(proc.pid)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for target in (None, *pids):  # None: the whole process group
            try:
                if target is None:
                    os.killpg(proc.pid, sig)
                else:
                    os.kill(target, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and (
            proc.poll() is None or any(_alive(p) for p in pids[1:])
        ):
            time.sleep(0.1)
        if proc.poll() is not None and not any(_alive(p) for p in pids[1:]):
            return


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _answers(url: str, api_key: str | None = None) -> str | None:
    """The first served model's id once ``{url}/models`` answers 200, else None."""
    try:
        resp = httpx.get(
            f"{url}/models",
            timeout=2.0,
            headers={"Authorization": f"Bearer {api_key}"} if api_key else None,
        )
        if resp.status_code == 200:
            data = resp.json().get("data") or [{}]
            return str(data[0].get("id", "?"))
    except (httpx.HTTPError, ValueError):
        pass
    return None


def supervise(
    cmd: Sequence[str],
    env: Mapping[str, str],
    url: str,
    *,
    ready_timeout_s: float = 600.0,
    tail: int = 40,
    grace_s: float = 15.0,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    api_key: str | None = None,
) -> int:
    """Run ``cmd`` until it exits or this process is interrupted (see the module docstring);
    ``api_key``: the server's key, sent with the readiness poll and masked in the log it passes
    on."""
    last: collections.deque[str] = collections.deque(maxlen=tail)
    proc = subprocess.Popen(
        list(cmd),
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    pump = threading.Thread(target=_pump, args=(proc, last, out, api_key), daemon=True)
    pump.start()
    previous = {s: signal.signal(s, _raise_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    t0 = time.monotonic()
    try:
        model, why = _wait_ready(proc, url, api_key, ready_timeout_s)
        if model is None:
            if proc.poll() is None:
                stop_tree(proc, grace_s)
            return _failed(why, pump, last, err)
        print(
            f"paravt serve-model: ready at {url} (model {model}) after "
            f"{time.monotonic() - t0:.0f} s",
            file=out,
            flush=True,
        )
        rc = proc.wait()
        return _failed(f"the server exited with code {rc}", pump, last, err) if rc else 0
    except _Stop as stop:
        stop_tree(proc, grace_s)
        print(
            f"paravt serve-model: stopped the server (signal {stop.signum})", file=err, flush=True
        )
        return 128 + stop.signum
    finally:
        if proc.poll() is None:
            stop_tree(proc, grace_s)
        for s, handler in previous.items():
            signal.signal(s, handler)


def _wait_ready(
    proc: subprocess.Popen, url: str, api_key: str | None, timeout_s: float
) -> tuple[str | None, str]:
    """Poll ``url``/models until it names the model: (the model, "") or (None, why not: the server
    exited first, or ``timeout_s`` passed)."""
    t0 = time.monotonic()
    while True:
        if proc.poll() is not None:
            return None, f"the server exited with code {proc.returncode} before answering"
        if time.monotonic() - t0 > timeout_s:
            return None, f"the server did not answer {url}/models within {timeout_s:g} s"
        model = _answers(url, api_key)
        if model is not None:
            return model, ""
        time.sleep(0.5)


def _raise_stop(signum: int, _frame: object) -> None:
    raise _Stop(signum)


def _pump(
    proc: subprocess.Popen, last: collections.deque[str], out: TextIO, secret: str | None = None
) -> None:
    """Pass the server's log through (and keep its tail), with ``secret`` (the API key, which an
    engine may log among its arguments: SGLang prints its ServerArgs) written as ``<api key>``."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if secret:
            line = line.replace(secret, "<api key>")
        last.append(line)
        out.write(line)
        out.flush()


def _failed(reason: str, pump: threading.Thread, last: collections.deque[str], err: TextIO) -> int:
    pump.join(timeout=2.0)
    print(f"paravt serve-model: {reason}; its last {len(last)} log lines:", file=err)
    err.write("".join(f"  | {line}" for line in last))
    err.flush()
    return 1
