"""Regression tests of issue 13, items 5-7: escapes from the python tool's sandbox.

Each test runs the attacker's code and asserts that it is now refused and that the tool keeps
serving afterwards.
"""

import asyncio
import contextlib
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from tool_helpers import call

from paravt.errors import ToolCallError
from paravt.tools import build_toolset
from paravt.tools.sandbox import pool as pool_module, runtime as runtime_module
from paravt.tools.sandbox.isolation import SandboxLimits
from paravt.tools.sandbox.pool import RuntimePool
from paravt.tools.sandbox.runtime import SandboxRuntime

LIMITS = SandboxLimits(wall_s=3.0, memory_bytes=1 << 30)
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap",
)
needs_root_unshare = pytest.mark.skipif(
    shutil.which("unshare") is None or os.getuid() != 0, reason="needs util-linux unshare as root"
)

NESTED_USERNS = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
rc = libc.unshare(CLONE_NEWUSER | CLONE_NEWNS)
print(rc, os.strerror(ctypes.get_errno()))
if rc == 0:
    os.makedirs('/tmp/m', exist_ok=True)
    print('mount', libc.mount(b'none', b'/tmp/m', b'tmpfs', 0, b'size=1g'))
"""

FILL = """
n = 0
try:
    for i in range(25):  # 200 MiB in files of 8 MiB (each under RLIMIT_FSIZE)
        with open({path!r} + str(i), 'wb') as f:
            for _ in range(8):
                f.write(b'x' * (1 << 20)); n += 1
except OSError as e:
    print(type(e).__name__, e.errno)
print(n)
"""

FORGE = """
import json, os, struct
reply = {{"id": {rid}, "ok": True, "stdout": "A" * 1_000_000, "error": None, "images": []}}
body = json.dumps(reply).encode()
for fd in range(3, 12):
    try:
        os.write(fd, struct.pack(">I", len(body)) + body)
    except OSError:
        pass
"""


def _session(*codes: str, episode: str = "ep-attack", video_ctx=None):
    async def main():
        ts = build_toolset(["python"], options={"python": {"limits": LIMITS}})
        out = []
        for code in codes:
            (obs,) = await ts.run_calls(video_ctx, [call("python", code=code)])
            out.append(obs)
        (probe,) = await ts.run_calls(video_ctx, [call("python", code="print(6 * 7)")])
        await ts.finish(video_ctx)
        await ts.aclose()
        return out, probe

    out, probe = asyncio.run(main())
    assert probe.ok and probe.text == "42", probe
    return out


@needs_bwrap
def test_no_nested_user_namespace_so_no_private_tmpfs_beyond_the_memory_cap(make_ctx):
    nested, tmp, shm, dev = _session(
        NESTED_USERNS,
        FILL.format(path="/tmp/big"),
        FILL.format(path="/dev/shm/big"),
        FILL.format(path="/dev/big"),
        video_ctx=make_ctx(),
    )
    rc, reason = nested.text.split(" ", 1)
    assert rc == "-1" and "mount" not in nested.text, (
        nested.text
    )  # was: 0, then mount 0 (a 1 GiB tmpfs)
    assert (
        tmp.text.splitlines()[0].startswith("OSError 28") and int(tmp.text.splitlines()[-1]) <= 64
    )
    assert shm.text.splitlines()[-1] == "0" and dev.text.splitlines()[-1] == "0"  # read-only /dev


FORK_COUNT = """
import os, time
kids = []
try:
    for _ in range(200):
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        kids.append(pid)
except OSError as e:
    print('EAGAIN' if e.errno == 11 else e)
for k in kids:
    os.kill(k, 9)
print(len(kids))
"""


@needs_bwrap
def test_the_process_limit_still_holds_with_the_namespace_filter(make_ctx):
    # mapping the sandbox uid to the caller's (bwrap --unshare-user as root) would make it uid 0
    # on the host, which the kernel exempts from RLIMIT_NPROC: forks must still stop at the limit
    (forks,) = _session(FORK_COUNT, video_ctx=make_ctx())
    first, count = forks.text.splitlines()
    assert first == "EAGAIN" and int(count) < LIMITS.max_processes


@needs_bwrap
def test_a_forged_protocol_reply_cannot_exceed_the_output_cap(make_ctx):
    # the first call of a runtime has id 1; the forged reply claims it with 1,000,000 characters
    (forged, after) = _session(FORGE.format(rid=1), "print('next')", video_ctx=make_ctx())
    assert len(forged.text) <= LIMITS.max_output_chars + 100, len(forged.text)
    assert len(after.text) <= LIMITS.max_output_chars + 100


def test_python_refuses_to_start_without_bubblewrap_unless_weak_isolation_is_chosen():
    async def main():
        refused = SandboxRuntime(None, LIMITS, mode="unshare")
        try:
            return await refused.run("print(1)")
        finally:
            await refused.close()

    with pytest.raises(Exception, match="refuses to run without bubblewrap"):
        asyncio.run(main())


@needs_root_unshare
def test_the_unshare_fallback_kills_a_setsid_grandchild_and_never_hangs():
    marker = "313.25"
    code = (
        "import os\n"
        "for fd in range(3, 8):\n"  # the grandchild keeps the protocol pipes open
        "    try:\n        os.set_inheritable(fd, True)\n    except OSError:\n        pass\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    os.execv('/usr/bin/sleep', ['sleep', '{marker}'])\n"
        "while True:\n    pass"
    )

    async def main():
        rt = SandboxRuntime(None, LIMITS, mode="unshare", weak_isolation=True)
        t0 = time.monotonic()
        try:
            looped = await rt.run(code)
        finally:
            await rt.close()
        return looped, time.monotonic() - t0

    looped, took = asyncio.run(main())
    assert not looped.ok and "TimeoutError" in looped.error
    assert took < LIMITS.wall_s + 8  # was: close() blocked until the grandchild exited
    time.sleep(0.5)
    survivors = [p for p in Path("/proc").glob("[0-9]*") if marker in _cmdline(p)]
    assert survivors == []


@needs_root_unshare
def test_the_unshare_fallback_has_a_private_pid_namespace():
    async def main():
        rt = SandboxRuntime(None, LIMITS, mode="unshare", weak_isolation=True)
        try:
            return await rt.run(
                "import os\nprint(os.getpid(), len([p for p in os.listdir('/proc') if "
                "p.isdigit()]))"
            )
        finally:
            await rt.close()

    res = asyncio.run(main())
    pid, visible = map(int, res.stdout.split())
    assert (
        res.ok and pid <= 3 and visible <= 3
    )  # pid 1 supervisor, 2 the worker; host processes invisible


def _cmdline(p: Path) -> str:
    try:
        return (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_the_in_process_python_tool_refuses_a_weak_sandbox_per_call_unless_the_rollout_opts_in(
    make_ctx,
):
    from paravt.config import TrainConfig

    assert TrainConfig().rollout.python_weak_isolation is False  # the default refuses

    async def main(weak: bool):
        ts = build_toolset(
            ["python"],
            options={"python": {"mode": "rlimits", "weak_isolation": weak, "limits": LIMITS}},
        )
        ctx = make_ctx(episode_id=f"weak-{weak}")
        (obs,) = await ts.run_calls(ctx, [call("python", code="print(6 * 7)")])
        await ts.finish(ctx)
        await ts.aclose()
        return obs

    refused, allowed = asyncio.run(main(False)), asyncio.run(main(True))
    assert (
        not refused.ok
        and "refuses to run without bubblewrap (isolation here: rlimits)" in refused.error
    )
    assert allowed.ok and allowed.text == "42"


def test_the_python_tool_binds_only_a_regular_file_even_in_process(make_ctx):
    async def main():
        ts = build_toolset(["python"], options={"python": {"limits": LIMITS}})
        ctx = make_ctx(episode_id="root-bind")
        ctx.video = "/"
        (obs,) = await ts.run_calls(
            ctx, [call("python", code="import os; print(os.listdir('/video'))")]
        )
        active = ts.tools["python"].active_runtimes
        await ts.aclose()
        return obs, active

    obs, active = asyncio.run(main())
    assert not obs.ok and "not a regular file" in obs.error and active == 0


@pytest.mark.skipif(os.getuid() != 0, reason="the rlimits mode drops to a sandbox uid only as root")
def test_a_setsid_escapee_of_the_rlimits_mode_blocks_no_close_and_keeps_its_runtime_counted(
    monkeypatch,
):
    """The rlimits mode has no PID namespace: a ``setsid`` grandchild outlives the kill, holding
    the sandbox's life pipe. Every wait stays bounded (close, the episode's release of the pool,
    the restart, which is refused), while `exited` (what the pool counts) waits for the escapee."""
    monkeypatch.setattr(runtime_module, "_CLOSE_WAIT_S", 0.5)
    monkeypatch.setattr(pool_module, "WAIT_S", 1.0)
    marker = "271.75"
    code = (
        "import os, sys\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execv('/usr/bin/sleep', ['sleep', '{marker}'])\n"
        "    os._exit(0)\n"
        "os.wait()\nprint('forked')"
    )

    async def main():
        pool = RuntimePool(max_runtimes=1, idle_ttl_s=60)
        rt = SandboxRuntime(None, LIMITS, mode="rlimits", weak_isolation=True)
        slot = pool.admit("e/1", "v", lambda: rt)
        forked = await rt.run(code)
        pool.done(slot)
        t0 = time.monotonic()
        await pool.release("e/1")
        released = time.monotonic() - t0
        gone = asyncio.ensure_future(rt.exited())
        await asyncio.sleep(0.2)
        counted = not gone.done()
        # max_runtimes=1: the escapee is still counted, so the next episode's runtime waits for it
        # (bounded)
        nxt = pool.admit(
            "e/2", "v", lambda: SandboxRuntime(None, LIMITS, mode="rlimits", weak_isolation=True)
        )
        with pytest.raises(ToolCallError, match="still exiting"):
            await nxt.wait_predecessor()
        pool.done(nxt)
        for p in Path("/proc").glob("[0-9]*"):
            if marker in _cmdline(p):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(p.name), signal.SIGKILL)
        await asyncio.wait_for(gone, 10)
        await pool.aclose()
        return forked, released, counted

    forked, released, counted = asyncio.run(main())
    assert forked.ok and forked.stdout.strip() == "forked", forked
    assert released < 1.0 + 0.5 + 3  # the bounds (WAIT_S, _CLOSE_WAIT_S), never the escapee's 271 s
    assert counted
