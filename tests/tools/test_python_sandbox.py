"""The python tool's isolation: every escape is blocked with a clear error AND the tool keeps
serving afterwards (the next call in the same episode succeeds)."""

import asyncio
import os
import shutil
import socket
import time
from pathlib import Path

import pytest
from tool_helpers import call

from paravt.tools import build_toolset
from paravt.tools.sandbox.isolation import SandboxLimits, _python_paths

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap",
)

LIMITS = SandboxLimits(wall_s=3.0, memory_bytes=1 << 30)


def session(make_ctx, *codes: str, episode: str = "ep-py"):
    """Run each code as one python call of the same episode; then a probe call must still work."""

    async def main():
        ts = build_toolset(["python"], options={"python": {"limits": LIMITS}})
        ctx = make_ctx(episode_id=episode)
        out = []
        for code in codes:
            (obs,) = await ts.run_calls(ctx, [call("python", code=code)])
            out.append(obs)
        (probe,) = await ts.run_calls(ctx, [call("python", code="print(6 * 7)")])
        tool = ts.tools["python"]
        uid = tool.pool.get(episode).runtime.uid
        await ts.finish(ctx)
        assert tool.active_runtimes == 0
        await ts.aclose()
        return out, probe, uid

    out, probe, uid = asyncio.run(main())
    assert probe.ok and probe.text == "42", probe  # the tool keeps serving
    return out, uid


def test_state_persists_across_calls_and_the_video_is_readable_through_our_decoder(make_ctx):
    (a, b, c), _ = session(
        make_ctx,
        "x = 40",
        "x + 2",
        "f = video.frames(10, 20, 4)\nprint(f.shape, video.info['duration'])\nshow(f[0])",
    )
    assert a.ok and a.text == "(no output)" and b.text == "42"
    assert (
        c.ok and c.text == "(4, 192, 256, 3) 40.0" and c.delivery == "inline"
    )  # the image is shown
    assert c.frames is not None and len(c.frames) == 1 and c.frames.array.shape == (1, 192, 256, 3)


def test_network_is_unreachable_even_on_loopback(make_ctx):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        (obs,), _ = session(
            make_ctx, f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)"
        )
    finally:
        server.close()
    assert not obs.ok and (
        "ConnectionRefusedError" in obs.error or "Network is unreachable" in obs.error
    )


def test_writes_outside_the_private_tmp_fail_and_tmp_is_writable(make_ctx, video, tmp_path):
    target = Path(video).parent / "planted.txt"
    codes = [
        f"open({str(target)!r}, 'w').write('x')",
        "open(video._path, 'ab').write(b'x')",
        "open('/usr/planted', 'w')",
        "open('/tmp/ok.txt', 'w').write('fine'); print(open('/tmp/ok.txt').read())",
    ]
    (a, b, c, d), _ = session(make_ctx, *codes)
    assert not target.exists() and not Path("/usr/planted").exists()
    assert "Read-only file system" in a.error or "No such file" in a.error
    assert "Read-only file system" in b.error or "Permission denied" in b.error
    assert "Read-only file system" in c.error
    assert d.ok and d.text == "fine"


def test_files_outside_the_bound_paths_do_not_exist_inside(make_ctx, video):
    secret = Path(video).parent / "secret.txt"  # next to the video, but only the video is bound
    secret.write_text("top-secret")
    secret.chmod(0o644)
    (a, b), _ = session(
        make_ctx, f"print(open({str(secret)!r}).read())", "import os; print(os.listdir('/'))"
    )
    assert not a.ok and "FileNotFoundError" in a.error and "top-secret" not in a.text
    names = set(eval(b.text))
    # the interpreter, venv and checkout are bound where they live on the host (/work, /check, ...)
    bound_roots = {Path(p).parts[1] for p in _python_paths()}
    system = {
        "bin",
        "dev",
        "etc",
        "lib",
        "lib32",
        "lib64",
        "proc",
        "root",
        "sbin",
        "tmp",
        "usr",
        "video",
    }
    assert names <= system | bound_roots, names - system - bound_roots
    assert "home" not in names or "home" in bound_roots


def test_the_parent_environment_is_invisible(make_ctx, monkeypatch):
    monkeypatch.setenv("PARAVT_TEST_SECRET", "hunter2-env")
    (a, b), _ = session(
        make_ctx,
        "import os; print(dict(os.environ))",
        "print(open('/proc/1/environ').read() + open('/proc/self/environ').read())",
    )
    assert a.ok and "hunter2" not in a.text and "PARAVT_TEST_SECRET" not in a.text
    assert "hunter2" not in b.text


def test_fork_bomb_hits_the_process_limit_then_the_wall_time(make_ctx):
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    warm_code = "import os; print(os.getuid(), os.readlink('/proc/self/ns/pid'))"
    (warm, obs), _ = session(make_ctx, warm_code, bomb)
    assert warm.ok and not obs.ok and "TimeoutError" in obs.error and "restarts" in obs.error
    uid, pid_ns = warm.text.split()
    assert int(uid) != 0
    # no process is left in the sandbox's PID namespace
    deadline = time.monotonic() + 5  # SIGKILLed processes may take a moment to be reaped
    while (
        leftovers := [p for p in Path("/proc").glob("[0-9]*") if _pid_ns_of(p) == pid_ns]
    ) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftovers == [], [(p, _status(p)) for p in leftovers]


def _status(proc: Path) -> str:
    try:
        return (proc / "status").read_text().splitlines()[2] + " " + (proc / "cmdline").read_text()
    except OSError:
        return "gone"


def _pid_ns_of(proc: Path) -> str | None:
    try:
        return os.readlink(proc / "ns" / "pid")
    except OSError:
        return None


def test_allocating_ten_gigabytes_fails_with_memory_error(make_ctx):
    (obs, after), _ = session(make_ctx, "a = bytearray(10 * 2**30)", "y = 1; print('alive')")
    assert not obs.ok and "MemoryError" in obs.error and after.text == "alive"


def test_an_infinite_loop_is_killed_at_the_wall_time_and_state_is_reset(make_ctx):
    (a, loop, after), _ = session(
        make_ctx, "kept = 1", "while True:\n    pass", "print('kept' in globals())"
    )
    assert a.ok and not loop.ok and "longer than 3 s wall time" in loop.error
    assert after.text == "False"  # a fresh runtime


def test_output_is_capped(make_ctx):
    (obs,), _ = session(make_ctx, "print('x' * 100_000)")
    assert obs.ok and obs.text.startswith("x" * 100) and "more characters truncated" in obs.text
    assert len(obs.text) < LIMITS.max_output_chars + 100


def test_a_runtime_left_by_a_finished_event_loop_is_killed_and_replaced(make_ctx):
    ts = build_toolset(["python"], options={"python": {"limits": LIMITS}})
    ctx = make_ctx(episode_id="loops")
    (first,) = asyncio.run(
        ts.run_calls(ctx, [call("python", code="import os; z = 1; print(os.getpid())")])
    )
    old = ts.tools["python"].pool.get("loops").runtime._proc.pid  # the host pid of the old sandbox
    (second,) = asyncio.run(ts.run_calls(ctx, [call("python", code="print('z' in globals())")]))
    assert first.ok and second.ok and second.text == "False"  # a new runtime on the new loop
    assert (
        not Path(f"/proc/{old}").exists() or "Z" in Path(f"/proc/{old}/stat").read_text().split()[2]
    )
    asyncio.run(ts.aclose())


@pytest.mark.skipif(
    shutil.which("unshare") is None or os.getuid() != 0, reason="needs util-linux unshare as root"
)
def test_the_unshare_fallback_still_blocks_network_environment_and_memory(monkeypatch):
    from paravt.tools.sandbox.runtime import SandboxRuntime

    monkeypatch.setenv("PARAVT_TEST_SECRET", "hunter2-env")

    async def main():
        rt = SandboxRuntime(None, LIMITS, mode="unshare", weak_isolation=True)
        try:
            net = await rt.run(
                "import socket\ns = socket.socket()\ns.settimeout(2)\ns.connect(('127.0.0.1', 9))"
            )
            env = await rt.run("import os; print(dict(os.environ), os.getuid())")
            mem = await rt.run("a = bytearray(10 * 2**30)")
            ok = await rt.run("print('alive')")
        finally:
            await rt.close()
        return net, env, mem, ok

    net, env, mem, ok = asyncio.run(main())
    assert not net.ok and (
        "Network is unreachable" in net.error or "ConnectionRefused" in net.error
    )
    assert "hunter2" not in env.stdout and not env.stdout.rstrip().endswith(" 0")  # not root
    assert not mem.ok and "MemoryError" in mem.error and ok.stdout.strip() == "alive"
