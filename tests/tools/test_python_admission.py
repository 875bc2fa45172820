"""Issue 28, items 3, 4 and 10: the python tool binds only videos, ``max_runtimes`` holds under a
burst (counted as sandbox PROCESSES on this host), an owner's share is bounded, and the weak
sandbox imports the same standard library as the strong one."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
import shutil
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest
from server_helpers import ServerThread

from paravt.config import ToolServerConfig
from paravt.errors import ToolCallError
from paravt.tools.python_tool import PythonTool
from paravt.tools.sandbox.isolation import RUNNER, SandboxLimits
from paravt.tools.sandbox.pool import RuntimePool
from paravt.tools.sandbox.preload import PRELOAD
from paravt.tools.sandbox.runtime import SandboxRuntime
from paravt.tools.server.app import create_app
from paravt.tools.server.wire import context_to_wire

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed"
)
LIMITS = SandboxLimits(wall_s=5.0, memory_bytes=1 << 30)


@pytest.fixture
def root(tmp_path: Path, video: str) -> tuple[Path, str]:
    """A video root with a uniquely named clip (its name marks this test's sandboxes in /proc)
    and a secret that is not a video."""
    r = tmp_path / "root"
    r.mkdir()
    name = f"clip-{uuid.uuid4().hex[:12]}.mp4"
    shutil.copy(video, r / name)
    (r / "credentials.env").write_text("API_KEY=hunter2-secret\n")
    return r, name


def runtimes_alive(marker: str) -> int:
    """Sandboxes of this test alive now: runner processes (not their forked workers) whose config
    names ``marker``."""
    procs: dict[int, tuple[list[str], int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        procs[int(entry)] = ([a.decode(errors="replace") for a in argv], ppid)

    def is_runner(argv: list[str]) -> bool:
        return len(argv) >= 4 and argv[1:3] == ["-I", str(RUNNER)] and marker in argv[3]

    return sum(
        1
        for argv, ppid in procs.values()
        if is_runner(argv) and not is_runner(procs.get(ppid, ([], 0))[0])
    )


class PeakCounter:
    """Samples `runtimes_alive` every 20 ms in a thread; ``peak`` is the most seen at once."""

    def __init__(self, marker: str) -> None:
        self.marker, self.peak, self._stop = marker, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, runtimes_alive(self.marker))
            time.sleep(0.02)

    def __enter__(self) -> PeakCounter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _item(make_ctx, video: str, session: str, trajectory: str, code: str) -> dict:
    ctx = make_ctx(episode_id=trajectory)
    ctx.video = video
    return {
        "session": session,
        "trajectory_id": trajectory,
        "context": context_to_wire(ctx),
        "calls": [{"name": "python", "arguments": {"code": code}, "error": None}],
    }


def _batch(url: str, items: list[dict]) -> list[dict]:
    resp = httpx.post(url + "/v1/batch", json={"items": items}, timeout=60)
    assert resp.status_code == 200, resp.text
    return [r["observations"][0] for r in resp.json()["results"]]


@needs_bwrap
def test_a_file_that_is_not_a_video_is_never_bound(make_ctx, root) -> None:
    """Item 3: ``serve-tools --tools python --video-root R`` with an item whose video is
    R/credentials.env: an error naming the rule, not the secret; a real video still works."""
    r, name = root
    app = create_app(["python", "crop_video"], ToolServerConfig(video_roots=[str(r)]))
    read = "print(open(video._path).read())"
    with ServerThread(app) as srv:
        (secret,) = _batch(
            srv.url, [_item(make_ctx, str(r / "credentials.env"), "s" * 32, "t-secret", read)]
        )
        (clip,) = _batch(
            srv.url,
            [_item(make_ctx, str(r / name), "s" * 32, "t-clip", "print(video.info['fps'])")],
        )
    assert "hunter2" not in str(secret) and secret["error"] is not None
    assert (
        "binds only the episode's video" in secret["error"]
        and "cannot be opened as a video" in secret["error"]
    )
    assert clip["error"] is None and clip["text"] == "2.0"


@needs_bwrap
def test_max_runtimes_holds_under_a_burst_of_new_trajectories(make_ctx, root) -> None:
    """Item 4 (scaled to max_runtimes=4 to stay fast): 4 idle runtimes, then 3 concurrent requests
    of 4 new trajectories each (other sessions). Before the fix the sandboxes alive at once
    exceeded the cap (25 of 16 at full scale); now never more than 4, and every call answers."""
    r, name = root
    cap = 4
    app = create_app(
        ["python"], ToolServerConfig(video_roots=[str(r)], max_runtimes=cap, idle_ttl_s=60)
    )
    video = str(r / name)
    with ServerThread(app) as srv, PeakCounter(name) as peak:
        idle = _batch(
            srv.url, [_item(make_ctx, video, "i" * 32, f"idle-{k}", "v = 1") for k in range(cap)]
        )
        assert all(o["error"] is None for o in idle) and runtimes_alive(name) == cap

        async def burst() -> list[list[dict]]:
            sessions = [c * 32 for c in "abc"]
            return await asyncio.gather(
                *(
                    asyncio.to_thread(
                        _batch,
                        srv.url,
                        [_item(make_ctx, video, s, f"new-{k}", "print(7 * 6)") for k in range(cap)],
                    )
                    for s in sessions
                )
            )

        t0 = time.monotonic()
        answers = [o for batch in asyncio.run(burst()) for o in batch]
        elapsed = time.monotonic() - t0
    assert peak.peak <= cap, f"{peak.peak} sandboxes alive at once against max_runtimes={cap}"
    served = [o for o in answers if o["error"] is None]
    refused = [o for o in answers if o["error"] is not None]
    assert all(o["text"] == "42" for o in served) and len(served) >= cap
    assert all("busy" in o["error"] or "evicted" in o["error"] for o in refused), refused
    assert elapsed < 30.0 and runtimes_alive(name) <= cap


@needs_bwrap
def test_an_owner_holding_every_runtime_busy_cannot_starve_another(make_ctx, root) -> None:
    """Item 4, fairness: owner A's 3 runtimes all sleep (busy); owner B's new trajectory is served
    at once by taking A's least recently used one (A's call says it was evicted), instead of
    "busy" until A lets go."""
    r, name = root

    async def main() -> tuple[list, object, float]:
        tool = PythonTool(LIMITS, max_runtimes=3)
        ctxs = [make_ctx(episode_id=f"A/{k}") for k in range(3)]
        for c in ctxs:
            c.video = str(r / name)
        await asyncio.gather(*(tool.run(c, {"code": "x = 1"}) for c in ctxs))
        sleeping = [
            asyncio.ensure_future(tool.run(c, {"code": "import time; time.sleep(4)"})) for c in ctxs
        ]
        await asyncio.sleep(0.5)
        b = make_ctx(episode_id="B/0")
        b.video = str(r / name)
        t0 = time.monotonic()
        served = await tool.run(b, {"code": "print('b')"})
        waited = time.monotonic() - t0
        results = await asyncio.gather(*sleeping)
        assert tool.active_runtimes <= 3
        await tool.aclose()
        return results, served, waited

    results, served, waited = asyncio.run(main())
    assert served.ok and served.text == "b" and waited < 3.5  # before A's 4 s sleeps ended
    evicted = [o for o in results if not o.ok]
    assert len(evicted) == 1 and "evicted" in (evicted[0].error or "")


@pytest.mark.parametrize("mode", ["bwrap", "unshare"])
def test_every_mode_imports_the_one_preload_list(mode: str) -> None:
    """Item 10: ``import glob`` (and every module of `runner.PRELOAD`) works in the weak mode as
    in the strong one (without bubblewrap the interpreter's files may be unreadable after the uid
    drop, so the list is imported before it)."""
    if shutil.which(mode) is None or (mode == "unshare" and os.getuid() != 0):
        pytest.skip(f"needs {mode}" + (" as root" if mode == "unshare" else ""))
    code = (
        f"import importlib\nbad = []\nfor m in {PRELOAD!r}:\n    try:\n"
        "        importlib.import_module(m)\n"
        "    except Exception as e:\n        bad.append(m)\nprint(bad)"
    )

    async def main() -> tuple[object, object]:
        rt = SandboxRuntime(None, LIMITS, mode=mode, weak_isolation=True)
        try:
            return await rt.run(code), await rt.run(
                "import glob, fnmatch; print(glob.escape('a*'))"
            )
        finally:
            await rt.close()

    listed, glob = asyncio.run(main())
    assert "glob" in PRELOAD and listed.ok and listed.stdout.strip() == "[]", listed
    assert glob.ok and glob.stdout.strip() == "a[*]", glob


#: Standard-library modules an honest script may import that the weak mode's old list missed
#: (the audit of issue 28 item 10 found each failing with ModuleNotFoundError there).
BEYOND_THE_LIST = (
    "argparse",
    "zipfile",
    "tarfile",
    "sqlite3",
    "xml.etree.ElementTree",
    "email.mime.text",
    "subprocess",
    "asyncio",
    "concurrent.futures",
    "multiprocessing",
    "configparser",
    "tomllib",
    "gettext",
    "sched",
    "encodings.cp1252",
    "urllib.request",
    "http.client",
    "logging.handlers",
)
_FAILING = (
    "import importlib, sys\nbad = []\nfor m in sorted(sys.stdlib_module_names) + %r:\n"
    "    if m.startswith('_') or m in %r:\n        continue\n    try:\n        "
    "importlib.import_module(m)\n"
    "    except BaseException:\n        bad.append(m)\nprint(' '.join(bad))"
)


def test_the_weak_mode_imports_the_standard_library_like_bubblewrap() -> None:
    """Item 10: as root, the weak mode drops to a uid that may not read the interpreter's files;
    every standard-library module that imports under bubblewrap imports there too (the runner
    imports the whole library before the drop: `preload.preload_stdlib`)."""
    if shutil.which("bwrap") is None or shutil.which("unshare") is None or os.getuid() != 0:
        pytest.skip("needs bwrap and unshare, as root")
    from paravt.tools.sandbox.preload import NOT_PRELOADED

    code = _FAILING % (list(BEYOND_THE_LIST), sorted(NOT_PRELOADED))

    async def failing(mode: str) -> set[str]:
        rt = SandboxRuntime(None, LIMITS, mode=mode, weak_isolation=mode != "bwrap")
        try:
            out = await rt.run(code)
        finally:
            await rt.close()
        assert out.ok, out
        return set(out.stdout.split())

    strong, weak = asyncio.run(failing("bwrap")), asyncio.run(failing("unshare"))
    assert weak <= strong, sorted(weak - strong)
    assert not set(BEYOND_THE_LIST) & weak, sorted(set(BEYOND_THE_LIST) & weak)


class _FakeRuntime:
    """What `RuntimePool` uses of a `SandboxRuntime`, with no process: ``close`` waits for ``gate``
    (a sandbox still on its way out) unless ``slow_close`` is False."""

    def __init__(self, slow_close: bool = False) -> None:
        self.retired, self.closed, self.gate = False, False, asyncio.Event()
        if not slow_close:
            self.gate.set()

    @property
    def alive(self) -> bool:
        return not self.closed

    def retire(self) -> None:
        self.retired = True

    def kill_now(self) -> None:
        self.closed = True

    async def close(self) -> None:
        await self.gate.wait()
        self.closed = True

    async def exited(self) -> None:
        await self.gate.wait()


def test_a_runtime_factory_that_raises_evicts_no_one() -> None:
    """max_runtimes=1 held by an idle runtime; a new episode whose runtime cannot be made gets the
    factory's error, and the idle runtime stays (it used to be evicted first, its close then
    dropped from the count)."""

    def broken() -> SandboxRuntime:
        raise ToolCallError("cannot make a runtime")

    async def main() -> None:
        pool = RuntimePool(max_runtimes=1, idle_ttl_s=60)
        held = _FakeRuntime(slow_close=True)
        pool.done(pool.admit("a", "v.mp4", lambda: held))  # type: ignore[arg-type, return-value]
        with pytest.raises(ToolCallError, match="cannot make"):
            pool.admit("b", "v.mp4", broken)
        assert pool.has("a") and not held.retired and not pool.has("b")
        held.gate.set()
        await pool.aclose()

    asyncio.run(main())


def test_a_close_still_running_stays_counted_when_its_successor_is_cancelled_or_released() -> None:
    """A new slot claims its victim's close (Slot.after). A call cancelled while awaiting it, and
    then the slot released, used to drop that close from the count: the next runtime was admitted
    at once while the evicted sandbox was still alive (two processes against max_runtimes=1)."""

    async def main() -> None:
        pool = RuntimePool(max_runtimes=1, idle_ttl_s=60)
        victim, successor = _FakeRuntime(slow_close=True), _FakeRuntime()
        pool.done(pool.admit("a", "v.mp4", lambda: victim))  # type: ignore[arg-type, return-value]
        b = pool.admit("b", "v.mp4", lambda: successor)  # type: ignore[arg-type, return-value]
        assert victim.retired and b.after is not None and not b.after.done()
        waiting = asyncio.ensure_future(b.wait_predecessor())
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert b.after is not None  # the next call on b still waits for it
        pool.done(b)
        released = asyncio.ensure_future(pool.release("b"))  # detaches b, then awaits its close
        await asyncio.sleep(0.01)
        assert not pool.has("b") and not released.done()  # b's close includes the victim's
        c = pool.admit("c", "v.mp4", _FakeRuntime)  # type: ignore[arg-type]
        assert (
            c.after is not None and not c.after.done() and not victim.closed
        )  # c waits for the victim
        victim.gate.set()
        await c.wait_predecessor()
        await released
        assert victim.closed and c.after is None
        pool.done(c)
        await pool.aclose()

    asyncio.run(main())


def test_evicting_a_slot_still_waiting_for_its_predecessor_keeps_one_runtime_per_slot() -> None:
    """max_runtimes=1: b evicts a and waits for a's close; c evicts b (not started yet). c must wait
    for a's sandbox (b stood for it), and nothing else is admitted meanwhile."""

    async def main() -> None:
        pool = RuntimePool(max_runtimes=1, idle_ttl_s=60)
        first = _FakeRuntime(slow_close=True)
        pool.done(pool.admit("a", "v.mp4", lambda: first))  # type: ignore[arg-type, return-value]
        pool.done(pool.admit("b", "v.mp4", _FakeRuntime))  # type: ignore[arg-type]
        c = pool.admit("c", "v.mp4", _FakeRuntime)  # type: ignore[arg-type]
        await asyncio.sleep(0.01)  # b's own close (it never started) is done
        assert c.after is not None and not c.after.done()
        with pytest.raises(ToolCallError, match="busy"):
            pool.admit("d", "v.mp4", _FakeRuntime)  # type: ignore[arg-type]
        first.gate.set()
        await c.wait_predecessor()
        assert first.closed
        pool.done(c)
        await pool.aclose()

    asyncio.run(main())


@needs_bwrap
def test_a_runtime_closed_as_it_starts_answers_with_an_error() -> None:
    """An eviction can close a runtime after its sandbox said hello but before ``run`` used it:
    ``run`` asserted the process was still there (the call failed with an AssertionError). Now
    the call gets an error result, and the next call starts a fresh runtime."""

    async def main() -> tuple[object, object]:
        rt = SandboxRuntime(None, LIMITS, mode="bwrap")
        read = rt._read_message

        async def hello_then_closed() -> tuple[dict, list[bytes]]:
            hello = await read()
            await rt.close()  # the pool's close task, run between the hello and the request
            return hello

        rt._read_message = hello_then_closed  # type: ignore[method-assign]
        closed = await rt.run("print(1)")
        rt._read_message = read  # type: ignore[method-assign]
        try:
            return closed, await rt.run("print(2)")
        finally:
            await rt.close()

    closed, again = asyncio.run(main())
    assert not closed.ok and "closed" in (closed.error or ""), closed
    assert again.ok and again.stdout.strip() == "2", again


@needs_bwrap
def test_a_second_close_waits_for_the_sandbox_the_first_one_killed() -> None:
    """Two closes at once (the pool's eviction and the runtime's own, a start that found itself
    retired): the second found the process already taken and returned while the sandbox was still
    dying, so the pool admitted its successor beside it (5 sandboxes against max_runtimes=4)."""

    async def main() -> None:
        rt = SandboxRuntime(None, LIMITS, mode="bwrap")
        assert (await rt.run("x = 1")).ok
        proc = rt._proc
        assert proc is not None and proc.stdout is not None
        first = asyncio.ensure_future(rt.close())
        await asyncio.sleep(0)  # the first close has taken the process and waits for it
        await rt.close()
        assert proc.returncode is not None and proc.stdout.at_eof()
        await first

    asyncio.run(main())


@needs_bwrap
def test_close_returns_only_once_every_process_of_the_sandbox_is_gone() -> None:
    """close() waited for stdout's EOF, which the runner's worker never held: as the PID namespace
    was torn down, the worker often still ran when close returned (the pool then admitted a
    successor beside it). Now close waits for every process of the sandbox."""
    limits = dataclasses.replace(
        LIMITS, memory_bytes=LIMITS.memory_bytes + random.randrange(1, 1 << 20)
    )
    marker = f'"memory_bytes": {limits.memory_bytes}'.encode()  # in the sandbox's argv (its config)

    def left() -> list[str]:
        found = []
        for p in Path("/proc").glob("[0-9]*"):
            with contextlib.suppress(OSError):
                if marker in (p / "cmdline").read_bytes():
                    found.append(p.name)
        return found

    async def main() -> list[list[str]]:
        leftovers = []
        for _ in range(8):
            rt = SandboxRuntime(None, limits, mode="bwrap")
            assert (await rt.run("x = 1")).ok and left()
            await rt.close()
            leftovers.append(left())
        return leftovers

    assert all(not pids for pids in asyncio.run(main()))


@needs_bwrap
def test_a_sandbox_slow_to_exit_counts_until_it_exits_and_no_wait_hangs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sandbox still alive when a bounded close gives up (`_CLOSE_WAIT_S`: a loaded host, or a
    ``setsid`` escapee in the rlimits mode) was dropped as if gone: the pool started its
    successor, and the runtime its own restart, beside it. Now `exited` (what the pool counts)
    waits for the exit, while the restart is REFUSED after the bound instead of waiting forever;
    once the sandbox is gone the runtime runs again."""
    from paravt.tools.sandbox import runtime as runtime_module

    real_gone = runtime_module._gone
    gate: list[asyncio.Event] = []

    async def slow_gone(proc: asyncio.subprocess.Process, life: int | None) -> None:
        await gate[0].wait()
        await real_gone(proc, life)

    monkeypatch.setattr(runtime_module, "_CLOSE_WAIT_S", 0.2)
    monkeypatch.setattr(runtime_module, "_gone", slow_gone)

    async def main() -> None:
        gate.append(asyncio.Event())
        rt = SandboxRuntime(None, LIMITS, mode="bwrap")
        assert (await rt.run("x = 1")).ok
        t0 = time.monotonic()
        await rt.close()  # gives up after 0.2 s: the sandbox still "runs"
        assert time.monotonic() - t0 < 2.0
        gone = asyncio.ensure_future(rt.exited())
        with pytest.raises(ToolCallError, match="still exiting"):
            await rt.run("print(2)")  # refused after 0.2 s, not started beside it
        assert not gone.done() and rt._proc is None
        gate[0].set()
        await gone
        assert (await rt.run("print(2)")).stdout.strip() == "2"
        await rt.close()

    asyncio.run(main())


@needs_bwrap
def test_a_sandbox_that_dies_between_calls_is_reaped_before_its_restart() -> None:
    """The model's code can kill its own supervisor after its call returned; the next call found
    the runtime dead and started a new sandbox over the old one's life pipe: one fd leaked per
    death (13 → 17 after 4). Now the dead sandbox is closed first: the fd count stays flat."""
    code = (
        "import os, threading\nthreading.Timer(0.2, lambda: os.kill(os.getppid(), "
        "9)).start()\nprint('ok')"
    )

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    async def main() -> list[int]:
        rt = SandboxRuntime(None, LIMITS, mode="bwrap")
        counts = []
        try:
            for _ in range(4):
                assert (await rt.run(code)).stdout.strip() == "ok"
                await asyncio.sleep(0.6)  # the supervisor is dead by now
                counts.append(fds())
        finally:
            await rt.close()
        return counts

    counts = asyncio.run(main())
    assert counts[-1] <= counts[0], counts
