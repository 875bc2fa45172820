"""A persistent, isolated Python runtime per episode (the ``python`` tool's process).

What holds (with bubblewrap; without it the runtime refuses to start unless ``weak_isolation``):
- Filesystem: a fresh root with ONLY what Python needs bound read-only — ``/usr`` (and the
  ``/lib*``, ``/bin`` links), the interpreter's prefix, the virtualenv, the ``paravt`` package and
  the episode's video (at ``/video/<name>``). The rest of the host (home directories, other
  datasets, /etc, the working tree's other files, /tmp) does not exist inside. The root and
  ``/dev`` are re-mounted read-only; the only writable place is a private size-capped tmpfs at
  ``/tmp``.
- Network: an empty network namespace (no interfaces but a down loopback: connects fail).
- Processes: a new PID namespace (host processes are invisible), a new session; the whole
  sandbox dies with its parent and is killed (SIGKILL to the process group; the PID namespace
  takes every descendant with it) on a wall-time timeout.
- Namespaces and mounts: the runner's seccomp filter refuses new namespaces (a nested user
  namespace could mount a tmpfs beyond RLIMIT_AS) and mounts; non-root callers also get bwrap's
  ``--disable-userns``. (As root, bwrap's user namespace would map the sandbox to host uid 0,
  which the kernel exempts from RLIMIT_NPROC, so it is not used.)
- Environment: cleared (``--clearenv``); only a few fixed variables are set.
- Limits (hard rlimits the code cannot raise): address space, process count, CPU seconds, file
  size, open files; stdout is capped; shown images are capped in number and size.
- Protocol: the model's code runs in a worker that never holds the pipes to this process; the
  runner's supervisor re-checks its replies, and `SandboxRuntime.run` caps them again.
- Identity: when the parent is root, the runner drops to a random unprivileged uid/gid after
  startup (the kernel does not apply RLIMIT_NPROC to root, and a non-root uid cannot regain
  root: bwrap mounts are nosuid and it sets no_new_privs).

Weak modes (``weak_isolation=True`` only; a loud warning is logged): ``unshare`` gives network
and PID namespaces (the runner is the namespace's init and is SIGKILLed when ``unshare`` dies, so
no descendant survives); the uid drop, seccomp filter, rlimits, clean environment and a private
work dir still apply, but the host filesystem is readable wherever the uid can read, and writable
wherever it can write (world-writable dirs such as /tmp). ``rlimits`` (neither tool) adds no
namespace at all. Every wait is bounded: `close` never blocks more than a few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import struct
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from paravt.errors import ToolCallError

log = logging.getLogger(__name__)

_HEADER = struct.Struct(">I")
_MAX_HEADER_BYTES = 4 << 20
RUNNER = Path(__file__).with_name("runner.py")
_CLOSE_WAIT_S = 5.0  # after SIGKILL: how long close() waits for the process before dropping it
_MAX_ERROR_CHARS = 2000
WEAK_REFUSAL = ("the python tool refuses to run without bubblewrap (isolation here: {mode}); install it "
                "(apt-get install -y bubblewrap) or opt into the weak sandbox explicitly "
                "(serve-tools --python-weak-isolation / PythonTool(weak_isolation=True))")


@dataclass(frozen=True)
class SandboxLimits:
    """Per-runtime limits. Defaults: 2 GiB address space, 64 processes/threads, 10 s wall and
    10 s CPU per call, 120 s CPU per episode, 16 MiB files, 64 MiB tmpfs, 8,000 output chars,
    8 shown images of ≤ 224×224 pixels each."""

    memory_bytes: int = 2 << 30
    max_processes: int = 64
    wall_s: float = 10.0
    cpu_call_s: int = 10
    cpu_total_s: int = 120
    max_file_bytes: int = 16 << 20
    tmpfs_bytes: int = 64 << 20
    max_open_files: int = 256
    max_output_chars: int = 8000
    max_images: int = 8
    image_max_pixels: int = 224 * 224
    startup_s: float = 20.0


@dataclass(frozen=True)
class RunResult:
    ok: bool
    stdout: str
    error: str | None
    images: tuple[np.ndarray, ...] = ()


@dataclass(frozen=True)
class VideoBinding:
    path: str  # host path (bound read-only)
    info: dict[str, Any]  # VideoInfo as a dict
    max_frames: int = 16
    max_pixels: int = 224 * 224
    size_factor: int = 32


def isolation_mode() -> str:
    """"bwrap", "unshare" or "rlimits" — the strongest isolation available on this host."""
    if shutil.which("bwrap"):
        return "bwrap"
    if shutil.which("unshare"):
        return "unshare"
    return "rlimits"


def _python_paths() -> list[str]:
    """Host directories the sandboxed interpreter needs (prefix, venv, paravt package)."""
    import paravt

    paths = {sys.base_prefix, sys.prefix, str(Path(paravt.__file__).resolve().parent)}
    exe = Path(sys.executable).resolve()
    paths.add(str(exe.parent.parent))
    return sorted(p for p in paths if not p.startswith("/usr/") and p != "/usr")


def _paravt_root() -> str:
    """The directory holding the parent's ``paravt`` package (bound, and first on the runner's
    sys.path, so the sandbox decodes with the same code even when an editable install points
    elsewhere)."""
    import paravt

    return str(Path(paravt.__file__).resolve().parent.parent)


def _bwrap_args(workdir: str, video: VideoBinding | None, limits: SandboxLimits) -> list[str]:
    args = ["bwrap", "--ro-bind", "/usr", "/usr"]
    for name in ("lib", "lib64", "lib32", "bin", "sbin"):
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += ["--ro-bind", str(p), str(p)]
    for f in ("/etc/ld.so.cache", "/etc/localtime"):
        if os.path.exists(f):
            args += ["--ro-bind", f, f]
    # the private /tmp comes BEFORE the binds: a checkout under /tmp (a CI clone) stays visible
    args += ["--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--size", str(limits.tmpfs_bytes),
             "--tmpfs", "/tmp"]
    binds = [(p, p) for p in _python_paths()]
    if video is not None:
        binds.append((video.path, _video_mount(video.path)))
    made: set[str] = set()
    for src, dest in binds:
        # bwrap would create missing parents with the host's modes (/root is 0700): make them
        # traversable explicitly, or the unprivileged uid cannot reach the bound directory.
        for parent in reversed(Path(dest).parents[:-1] if len(Path(dest).parents) > 1 else []):
            if str(parent) not in made and not str(parent).startswith("/usr"):
                made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--ro-bind", src, dest]
    # Nested user namespaces (a private tmpfs escapes RLIMIT_AS) are refused by the runner's
    # seccomp filter in every mode. A non-root caller's bwrap runs in a user namespace anyway, so
    # it also gets --disable-userns; as root bwrap must NOT map the sandbox uid to root (the kernel
    # exempts uid 0 from RLIMIT_NPROC): the runner drops to a random host uid instead.
    userns = [] if os.getuid() == 0 else ["--unshare-user", "--disable-userns"]
    args += ["--remount-ro", "/", "--remount-ro", "/dev", *userns,
             "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
             "--die-with-parent", "--new-session", "--clearenv", "--chdir", workdir]
    for key, value in _child_env(workdir).items():
        args += ["--setenv", key, value]
    return args + ["--"]


def _video_mount(path: str) -> str:
    return "/video/" + Path(path).name


def _child_env(workdir: str) -> dict[str, str]:
    return {"HOME": workdir, "TMPDIR": workdir, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "PYTHONDONTWRITEBYTECODE": "1"}


@dataclass
class _Launch:
    argv: list[str]
    env: dict[str, str]
    host_tmp: str | None = None
    cfg: dict[str, Any] = field(default_factory=dict)


def _plan(video: VideoBinding | None, limits: SandboxLimits, mode: str) -> _Launch:
    uid = gid = None
    if os.getuid() == 0:
        uid = gid = (1 << 20) + secrets.randbelow(1 << 29)  # random: per-sandbox NPROC accounting
    host_tmp = None
    if mode == "bwrap":
        workdir = "/tmp"
        video_path = _video_mount(video.path) if video else None
    else:
        host_tmp = tempfile.mkdtemp(prefix="paravt-py-")
        if uid is not None:
            os.chown(host_tmp, uid, gid)
        os.chmod(host_tmp, 0o700)
        workdir = host_tmp
        video_path = video.path if video else None
    lim = {"memory_bytes": limits.memory_bytes, "max_processes": limits.max_processes,
           "max_file_bytes": limits.max_file_bytes, "max_open_files": limits.max_open_files,
           "cpu_total_s": limits.cpu_total_s}
    cfg = {"uid": uid, "gid": gid, "workdir": workdir, "limits": lim, "video": video_path,
           "info": video.info if video else None, "video_max_frames": video.max_frames if video else 0,
           "video_max_pixels": video.max_pixels if video else 0,
           "size_factor": video.size_factor if video else 32, "cpu_call_s": limits.cpu_call_s,
           "max_output_chars": limits.max_output_chars, "max_images": limits.max_images,
           "image_max_pixels": limits.image_max_pixels, "paravt_root": _paravt_root()}
    py = [sys.executable, "-I", str(RUNNER), json.dumps(cfg)]
    if mode == "bwrap":
        argv = _bwrap_args(workdir, video, limits) + py
    elif mode == "unshare":
        # a PID namespace whose init (the runner) is SIGKILLed when unshare dies: no descendant
        # (a setsid grandchild included) outlives the runtime
        user = [] if os.getuid() == 0 else ["--map-root-user"]
        argv = ["unshare", *user, "--net", "--pid", "--fork", "--kill-child", "--mount-proc", "--"] + py
    else:
        argv = py
    return _Launch(argv, _child_env(workdir), host_tmp, cfg)


class SandboxRuntime:
    """One sandboxed interpreter; ``run(code)`` keeps variables across calls until ``close``."""

    def __init__(self, video: VideoBinding | None = None, limits: SandboxLimits = SandboxLimits(),
                 *, mode: str | None = None, weak_isolation: bool = False) -> None:
        self.video, self.limits = video, limits
        self.mode = mode or isolation_mode()
        self.weak_isolation = weak_isolation
        self._proc: asyncio.subprocess.Process | None = None
        self._launch: _Launch | None = None
        self._next_id = 0
        self._stderr_tail = b""
        self._drain: asyncio.Task | None = None
        self.uid: int | None = None
        self.seccomp = False

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def start(self) -> None:
        if self.mode != "bwrap" and not self.weak_isolation:
            raise ToolCallError(WEAK_REFUSAL.format(mode=self.mode))
        if self.mode != "bwrap":
            log.warning("python tool sandbox WITHOUT bubblewrap (mode=%s): the host filesystem is "
                        "readable by the sandbox uid; install bubblewrap for full isolation", self.mode)
        self._launch = _plan(self.video, self.limits, self.mode)
        self._proc = await asyncio.create_subprocess_exec(
            *self._launch.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._launch.env, start_new_session=True,
            limit=1 << 20)
        self._drain = asyncio.create_task(self._drain_stderr())
        try:
            hello = await asyncio.wait_for(self._read_message(), self.limits.startup_s)
        except (asyncio.TimeoutError, EOFError, ValueError) as exc:
            await self.close()
            raise ToolCallError(f"python sandbox failed to start ({self.mode}): {exc!r}; stderr: "
                                f"{self._stderr_tail.decode(errors='replace')[-800:]}") from None
        self.uid = hello[0].get("uid")
        self.seccomp = bool(hello[0].get("seccomp"))
        if not self.seccomp:
            log.warning("python sandbox without its seccomp filter (unsupported architecture): nested "
                        "namespaces are blocked only by bubblewrap's --disable-userns (non-root callers)")

    async def _drain_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        while chunk := await self._proc.stderr.read(65536):
            self._stderr_tail = (self._stderr_tail + chunk)[-8192:]

    async def _read_message(self) -> tuple[dict[str, Any], list[bytes]]:
        assert self._proc is not None and self._proc.stdout is not None
        try:
            raw = await self._proc.stdout.readexactly(_HEADER.size)
            (n,) = _HEADER.unpack(raw)
            if n > _MAX_HEADER_BYTES:
                raise ValueError(f"sandbox sent a {n}-byte header (limit {_MAX_HEADER_BYTES})")
            header = json.loads(await self._proc.stdout.readexactly(n))
            if not isinstance(header, dict):
                raise ValueError("sandbox header is not an object")
            blobs = [await self._proc.stdout.readexactly(size) for size in self._blob_sizes(header)]
        except asyncio.IncompleteReadError:
            raise EOFError("sandbox closed its output") from None
        return header, blobs

    def _blob_sizes(self, header: dict[str, Any]) -> list[int]:
        shapes = header.get("images") or []
        if not isinstance(shapes, list) or len(shapes) > self.limits.max_images:
            raise ValueError(f"sandbox declared {len(shapes)} images (limit {self.limits.max_images})")
        sizes = []
        for s in shapes:
            if (not isinstance(s, list) or len(s) != 3 or s[2] != 3
                    or not all(isinstance(d, int) and d > 0 for d in s)
                    or s[0] * s[1] > self.limits.image_max_pixels):
                raise ValueError(f"sandbox declared an invalid image shape {s!r}")
            sizes.append(s[0] * s[1] * 3)
        return sizes

    async def run(self, code: str) -> RunResult:
        """Execute ``code``; a timeout, crash or protocol violation kills the runtime and is
        reported as an error result (the next ``run`` starts a fresh one)."""
        if not self.alive:
            await self.start()
        assert self._proc is not None and self._proc.stdin is not None
        self._next_id += 1
        rid = self._next_id
        body = json.dumps({"id": rid, "code": code}).encode()
        try:
            header, blobs = await asyncio.wait_for(self._exchange(_HEADER.pack(len(body)) + body), self.limits.wall_s)
        except asyncio.TimeoutError:
            await self.close()
            return RunResult(False, "", f"TimeoutError: the code ran longer than {self.limits.wall_s:g} s "
                             "wall time and was killed; the python runtime restarts (variables are lost)")
        except (EOFError, ConnectionError, ValueError) as exc:
            rc = self._proc.returncode
            await self.close()
            why = _death_reason(rc) if isinstance(exc, EOFError) else str(exc)
            return RunResult(False, "", f"RuntimeError: the python runtime died ({why}); it restarts "
                             "on the next call (variables are lost)")
        if header.get("id") != rid:
            await self.close()
            return RunResult(False, "", "RuntimeError: the python runtime answered out of order and was restarted")
        images = tuple(np.frombuffer(b, np.uint8).reshape(s) for b, s in zip(blobs, header["images"]))
        # the reply shares a process with the model's code, which can forge it: cap it again here
        stdout = _cap(str(header.get("stdout", "")), self.limits.max_output_chars)
        error = None if header.get("error") is None else _cap(str(header["error"]), _MAX_ERROR_CHARS)
        return RunResult(bool(header.get("ok")), stdout, error, images)

    async def _exchange(self, request: bytes) -> tuple[dict[str, Any], list[bytes]]:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(request)
        await self._proc.stdin.drain()
        return await self._read_message()

    def kill_now(self) -> None:
        """Synchronous SIGKILL of the whole sandbox (for a runtime whose event loop is gone)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            transport = getattr(proc, "_transport", None)  # mark it closed: its loop is gone
            with contextlib.suppress(Exception):
                transport.close()  # type: ignore[union-attr]
        if self._launch is not None and self._launch.host_tmp:
            shutil.rmtree(self._launch.host_tmp, ignore_errors=True)
            self._launch.host_tmp = None

    async def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
            try:  # bounded: a descendant that escaped the kill may hold the pipes open
                await asyncio.wait_for(proc.wait(), _CLOSE_WAIT_S)
            except asyncio.TimeoutError:
                log.warning("python sandbox pid %d did not exit %g s after SIGKILL; dropped", proc.pid, _CLOSE_WAIT_S)
                transport = getattr(proc, "_transport", None)
                with contextlib.suppress(Exception):
                    transport.close()  # type: ignore[union-attr]
        if self._drain is not None:
            self._drain.cancel()
            self._drain = None
        if self._launch is not None and self._launch.host_tmp:
            shutil.rmtree(self._launch.host_tmp, ignore_errors=True)
            self._launch.host_tmp = None


def _cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (plus the runner's own truncation note, if any)."""
    slack = 64  # room for "…[N more characters truncated]"
    if len(text) <= limit + slack:
        return text
    return text[:limit] + f"\n…[{len(text) - limit} more characters truncated]"


def _death_reason(rc: int | None) -> str:
    if rc is None:
        return "closed its output"
    if rc < 0:
        sig = signal.Signals(-rc).name
        hint = {"SIGXCPU": "CPU time limit", "SIGKILL": "killed (memory or a limit)"}.get(sig, sig)
        return f"signal {sig}: {hint}"
    return f"exit code {rc}"


__all__ = ["RunResult", "SandboxLimits", "SandboxRuntime", "VideoBinding", "isolation_mode"]
