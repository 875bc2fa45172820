"""Attack probes of issue 13 (items 1-7) against the tool server and the python sandbox.

Each probe performs one attack and prints whether it SUCCEEDED (a break) or was refused. It runs
against the checkout on PYTHONPATH, old or new (it speaks raw HTTP to ``paravt serve-tools``
started as a subprocess, and builds `SandboxRuntime` with whatever arguments that version takes),
so the same script gives the before/after counts:

    PYTHONPATH=<checkout> .venv/bin/python benchmarks/security_probes.py [--slow]

``--slow`` adds the slow-loris body probe (35 s). The last line is JSON. Needs root, bubblewrap
and util-linux ``unshare`` for every probe; the others are reported as skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import inspect
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

import paravt.config
from paravt.tools.sandbox.isolation import SandboxLimits
from paravt.tools.sandbox.runtime import SandboxRuntime
from paravt.video import Encoding, probe, write_video

NEW = hasattr(paravt.config, "ToolServerConfig")
SESSION = "p" * 32


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, tools: str, root: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        argv = [
            sys.executable,
            "-c",
            "from paravt.cli import main; main()",
            "serve-tools",
            "--port",
            str(self.port),
            "--tools",
            tools,
        ]
        if NEW:
            argv += ["--video-root", str(root)]
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=root
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit("tool server did not start")
            time.sleep(0.2)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def _context(video: str, info: dict, **kw: object) -> dict:
    ctx = {
        "episode_id": "x",
        "video": video,
        "info": info,
        "crop_max_frames": 16,
        "crop_fps": 1.0,
        "crop_max_pixels": 224 * 224,
        "size_factor": 32,
        "budget": {
            "per_call_pixels": 16 * 224 * 224,
            "per_episode_pixels": 64 * 224 * 224,
            "used_pixels": 0,
            "calls": 0,
        },
    }
    ctx.update(kw)
    return ctx


def _batch(
    url: str,
    ctx: dict,
    calls: list[dict],
    tid: str = "t",
    session: str = SESSION,
    timeout: float = 120,
) -> httpx.Response:
    item = {"session": session, "trajectory_id": tid, "context": ctx, "calls": calls}
    return httpx.post(url + "/v1/batch", json={"items": [item]}, timeout=timeout)


def _crop(s: float = 0, e: float = 5) -> dict:
    return {"name": "crop_video", "arguments": {"start_time": s, "end_time": e}, "error": None}


def _obs(resp: httpx.Response) -> list[dict]:
    return resp.json()["results"][0]["observations"] if resp.status_code == 200 else []


def server_probes(root: Path, video: str, info: dict, slow: bool) -> dict[str, bool]:
    out: dict[str, bool] = {}
    secret = root.parent / "private.mp4"
    shutil.copy(video, secret)
    secret.chmod(0o600)
    srv = Server("crop_video,frame_select", root)
    try:
        got = _obs(_batch(srv.url, _context(str(secret), info), [_crop()]))
        out["S1 root-only file outside the roots is served"] = (
            bool(got) and got[0]["frames"] is not None
        )
        texts = [
            (_obs(_batch(srv.url, _context(p, info), [_crop()])) or [{"error": ""}])[0]["error"]
            or ""
            for p in ("/etc/shadow", "/nonexistent/x")
        ]
        texts = [t.replace("/etc/shadow", "P").replace("/nonexistent/x", "P") for t in texts]
        out["S2 error text reveals existence/size outside the roots"] = (
            texts[0] != texts[1] or "bytes" in texts[0]
        )
        got = _obs(_batch(srv.url, _context(f"{root}/../private.mp4", info), [_crop()]))
        out["S3 ../ escapes the roots"] = bool(got) and got[0]["frames"] is not None
        got = _obs(
            _batch(
                srv.url,
                _context(
                    str(root / "v.mp4"),
                    info,
                    crop_max_frames=299,
                    crop_fps=30.0,
                    crop_max_pixels=10**7,
                ),
                [_crop(0, 40)],
            )
        )
        out["S4 client caps accepted (crop > 16 frames)"] = (
            bool(got) and got[0]["frames"]["shape"][0] > 16
        )
        budget = {
            "per_call_pixels": 10**12,
            "per_episode_pixels": 10**12,
            "used_pixels": -(10**9),
            "calls": 0,
        }
        sel = {
            "name": "frame_select",
            "arguments": {"start_time": 0, "end_time": 40, "nframes": 40},
            "error": None,
        }
        got = _obs(_batch(srv.url, _context(str(root / "v.mp4"), info, budget=budget), [sel]))
        shape = got[0]["frames"]["shape"] if got and got[0]["frames"] else [0, 0, 0]
        out["S5 client visual budget accepted (> 802,816 px)"] = (
            shape[0] * shape[1] * shape[2] > 16 * 224 * 224
        )
        resp = _batch(srv.url, _context(str(root / "v.mp4"), info), [_crop(0, 1)] * 100)
        out["S6 100 calls in one request accepted"] = resp.status_code == 200
        resp = _batch(
            srv.url,
            _context(str(root / "v.mp4"), info),
            [
                {
                    "name": "crop_video",
                    "arguments": {"start_time": 0, "end_time": 1, "pad": "x" * (50 << 20)},
                    "error": None,
                }
            ],
        )
        out["S7 50 MB body accepted"] = resp.status_code == 200
        out["S8 slow-loris header connection kept > 12 s"] = _slow_header(srv.port)
        if slow:
            out["S9 slow body connection kept > 35 s"] = _slow_body(srv.port)
    finally:
        srv.close()
    if shutil.which("bwrap"):
        out.update(_python_server_probes(root, video, info))
    return out


def _slow_header(port: int) -> bool:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v1/batch HTTP/1.1\r\nHost: x\r\n")
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < 12:
            s.sendall(b"X")
            time.sleep(0.5)
        return True
    except OSError:
        return False
    finally:
        s.close()


def _slow_body(port: int) -> bool:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v1/batch HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < 35:
            s.sendall(b" ")
            s.settimeout(1.0)
            try:
                if s.recv(1) == b"":
                    return False
                return False  # the server answered (408)
            except TimeoutError:
                pass
        return True
    except OSError:
        return False
    finally:
        s.close()


def _py(code: str) -> dict:
    return {"name": "python", "arguments": {"code": code}, "error": None}


def _python_server_probes(root: Path, video: str, info: dict) -> dict[str, bool]:
    out: dict[str, bool] = {}
    srv = Server("python", root)
    try:
        got = _obs(
            _batch(
                srv.url, _context("/", info), [_py("print(open('/video/etc/passwd').read()[:5])")]
            )
        )
        out["S10 python binds a client path ('/')"] = bool(got) and "root:" in got[0]["text"]
        ctx = _context(str(root / "v.mp4"), info)
        _batch(srv.url, ctx, [_py("secret = 'A'")], tid="s3-e0", session="a" * 32)
        got = _obs(
            _batch(
                srv.url, ctx, [_py("print(globals().get('secret'))")], tid="s3-e0", session="b" * 32
            )
        )
        out["S11 a second caller reusing a trajectory id sees the first one's variables"] = (
            bool(got) and got[0]["text"] == "A"
        )
        before = _sandboxes(srv.proc.pid)
        for i in range(20):
            _batch(srv.url, ctx, [_py("x = 1")], tid=f"many-{i}", session="c" * 32)
        out["S12 20 trajectories keep 20 live runtimes (no cap)"] = (
            _sandboxes(srv.proc.pid) - before >= 20
        )
    finally:
        srv.close()
    return out


def _sandboxes(server_pid: int) -> int:
    kids = subprocess.run(
        ["pgrep", "-P", str(server_pid)], capture_output=True, text=True
    ).stdout.split()
    return len(kids)


def _runtime(mode: str | None) -> SandboxRuntime:
    kw = {"mode": mode} if mode else {}
    if "weak_isolation" in inspect.signature(SandboxRuntime).parameters and mode not in (
        None,
        "bwrap",
    ):
        kw["weak_isolation"] = True
    return SandboxRuntime(None, SandboxLimits(wall_s=3.0, memory_bytes=1 << 30), **kw)


async def _run(rt: SandboxRuntime, *codes: str) -> list:
    try:
        return [await rt.run(c) for c in codes]
    finally:
        await rt.close()


NESTED = (
    "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "print(libc.unshare(0x10000000 | 0x00020000) == 0 and os.makedirs('/tmp/m', exist_ok=True) "
    "is None "
    "and libc.mount(b'none', b'/tmp/m', b'tmpfs', 0, b'size=1g') == 0)"
)
FORGE = (
    "import json, os, struct\nbody = json.dumps({'id': 1, 'ok': True, 'stdout': 'A' * 1_000_000, "
    "'error': None, 'images': []}).encode()\nfor fd in range(3, 12):\n    try:\n"
    "        os.write(fd, struct.pack('>I', len(body)) + body)\n    except OSError:\n        pass"
)
GRANDCHILD = (
    "import os\nfor fd in range(3, 8):\n    try:\n        os.set_inheritable(fd, True)\n"
    "    except OSError:\n        pass\nif os.fork() == 0:\n    os.setsid()\n"
    "    os.execv('/usr/bin/sleep', ['sleep', '271.5'])\nwhile True:\n    pass"
)


def sandbox_probes() -> dict[str, bool]:
    out: dict[str, bool] = {}
    if shutil.which("bwrap"):
        (r,) = asyncio.run(_run(_runtime("bwrap"), NESTED))
        out["B1 nested user namespace + private 1 GiB tmpfs"] = r.stdout.strip() == "True"
        (r,) = asyncio.run(_run(_runtime("bwrap"), FORGE))
        out["B2 forged reply beyond the 8,000-char cap"] = len(r.stdout) > 8100
    if shutil.which("unshare") and os.getuid() == 0:
        t0 = time.monotonic()
        asyncio.run(_run(_runtime("unshare"), GRANDCHILD))
        took = time.monotonic() - t0
        time.sleep(0.5)
        leftovers = [
            int(p.name) for p in Path("/proc").glob("[0-9]*") if _cmd(p).startswith(b"sleep 271.5")
        ]
        for pid in leftovers:  # the probe's own leftover, by pid
            os.kill(pid, 9)
        alive = bool(leftovers)
        out["B3 setsid grandchild outlives the runtime or close() hangs"] = alive or took > 15
        (r,) = asyncio.run(
            _run(
                _runtime("unshare"),
                "import os\nprint(len([p for p in os.listdir('/proc') if p.isdigit()]))",
            )
        )
        out["B4 fallback sees host processes (no PID namespace)"] = r.ok and int(r.stdout) > 5
        rt = SandboxRuntime(None, SandboxLimits(wall_s=3.0), mode="unshare")  # no opt-in
        try:
            (r,) = asyncio.run(_run(rt, "print('ran')"))
            ran = r.stdout.strip() == "ran"
        except Exception:  # noqa: BLE001 - refused
            ran = False
        out["B5 python runs without bubblewrap and without an explicit opt-in"] = ran
    return out


def _cmd(p: Path) -> bytes:
    try:
        return (p / "cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return b""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slow", action="store_true", help="add the 35 s slow-body probe")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="paravt-probes-"))
    root = tmp / "root"
    root.mkdir()
    video = str(
        write_video(
            root / "v.mp4",
            [np.full((240, 320, 3), 3 * i, np.uint8) for i in range(80)],
            2.0,
            encoding=Encoding(gop=10),
        )
    )
    os.chmod(video, 0o644)
    info = dataclasses.asdict(probe(video))
    results = {**server_probes(root, video, info, args.slow), **sandbox_probes()}
    for name, broke in results.items():
        print(f"{'BREAK  ' if broke else 'refused'}  {name}")
    print(
        json.dumps(
            {
                "version": "new" if NEW else "old",
                "probes": len(results),
                "succeeded": sum(results.values()),
                "refused": len(results) - sum(results.values()),
            }
        )
    )
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
