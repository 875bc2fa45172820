"""The python tool's process RUNTIME: one persistent sandboxed interpreter per episode.

`SandboxRuntime` spawns the launch planned by `paravt.tools.sandbox.isolation` (the isolation
policy: bubblewrap / unshare / rlimits, mounts, environment, seccomp choice; its docstring says
what holds in each mode), speaks the runner's wire protocol (4-byte length + JSON, then image
blobs), caps every reply again, kills the sandbox on a wall-time timeout, a crash or a protocol
violation (the next ``run`` starts a fresh one) and never blocks ``close`` for more than a few
seconds (a sandbox still counts until it is gone: `SandboxRuntime.exited`). Admission (how many
runtimes live at once) is `paravt.tools.python_tool`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from paravt.errors import ToolCallError
from paravt.tools.sandbox.isolation import (
    WEAK_REFUSAL,
    Launch,
    SandboxLimits,
    VideoBinding,
    isolation_mode,
    plan_launch,
)

log = logging.getLogger(__name__)

_HEADER = struct.Struct(">I")
_MAX_HEADER_BYTES = 4 << 20
_CLOSE_WAIT_S = 5.0  # after SIGKILL: how long a bounded close() waits for the process
_MAX_ERROR_CHARS = 2000


@dataclass(frozen=True)
class RunResult:
    ok: bool
    stdout: str
    error: str | None
    images: tuple[np.ndarray, ...] = ()


class SandboxRuntime:
    """One sandboxed interpreter; ``run(code)`` keeps variables across calls until ``close``."""

    def __init__(
        self,
        video: VideoBinding | None = None,
        limits: SandboxLimits = SandboxLimits(),
        *,
        mode: str | None = None,
        weak_isolation: bool = False,
    ) -> None:
        self.video, self.limits = video, limits
        self.mode = mode or isolation_mode()
        self.weak_isolation = weak_isolation
        self._proc: asyncio.subprocess.Process | None = None
        self._launch: Launch | None = None
        self._next_id = 0
        self._stderr_tail = b""
        self._drain: asyncio.Task | None = None
        self.uid: int | None = None
        self.seccomp = False
        self.retired = False  # `retire`d: never starts again (the pool took it away)
        self._spawning = False
        self._life: int | None = None  # the read end of the sandbox's life pipe (`_gone`)
        self._exit: asyncio.Future[None] | None = None  # the last killed process's `_gone`
        self._exit_pid = 0

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def start(self) -> None:
        if self.mode != "bwrap" and not self.weak_isolation:
            raise ToolCallError(WEAK_REFUSAL.format(mode=self.mode))
        if self.mode != "bwrap":
            log.warning(
                "python tool sandbox WITHOUT bubblewrap (mode=%s): the host filesystem is "
                "readable by the sandbox uid; install bubblewrap for full isolation",
                self.mode,
            )
        if (
            self._exit is not None and not self._exit.done()
        ):  # a process it killed may still be exiting:
            with contextlib.suppress(asyncio.TimeoutError):  # one process per runtime at a time
                await asyncio.wait_for(asyncio.shield(self._exit), _CLOSE_WAIT_S)
            if not self._exit.done():
                raise ToolCallError(
                    f"this python runtime's previous sandbox (pid {self._exit_pid}) is still "
                    f"exiting {_CLOSE_WAIT_S:g} s after SIGKILL; call again later"
                )
        if self._life is not None:  # defensive: a process never closed (it cannot be waited for)
            os.close(self._life)
            self._life = None
        if self.retired:
            raise ToolCallError(
                "this python runtime was retired by the pool; call again for a fresh one"
            )
        await self._spawn()
        await self._hello()

    async def _spawn(self) -> None:
        """Launch the sandbox process with the plan of this runtime's mode."""
        self._launch = plan_launch(self.video, self.limits, self.mode)
        life, held = os.pipe()  # every sandbox process inherits ``held``: `_gone` waits for its EOF
        os.set_blocking(life, False)
        self._spawning = True
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self._launch.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._launch.env,
                start_new_session=True,
                limit=1 << 20,
                pass_fds=(held,),
            )
        except BaseException:
            os.close(life)
            raise
        finally:
            self._spawning = False
            os.close(held)
        self._life = life
        if self.retired or self._proc is None:  # retired while spawning: close() took the process
            await self.close()
            raise ToolCallError(
                "this python runtime was retired by the pool while starting; call again"
            )
        self._drain = asyncio.create_task(self._drain_stderr())

    async def _hello(self) -> None:
        """The runner's first message: its uid and whether its seccomp filter is on."""
        try:
            hello = await asyncio.wait_for(self._read_message(), self.limits.startup_s)
        except (TimeoutError, EOFError, ValueError) as exc:
            await self.close()
            raise ToolCallError(
                f"python sandbox failed to start ({self.mode}): {exc!r}; stderr: "
                f"{self._stderr_tail.decode(errors='replace')[-800:]}"
            ) from None
        self.uid = hello[0].get("uid")
        self.seccomp = bool(hello[0].get("seccomp"))
        if not self.seccomp:
            log.warning(
                "python sandbox without its seccomp filter (unsupported architecture): nested "
                "namespaces are blocked only by bubblewrap's --disable-userns (non-root callers)"
            )

    async def _drain_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        stderr = self._proc.stderr  # held: close() drops self._proc
        while chunk := await stderr.read(65536):
            self._stderr_tail = (self._stderr_tail + chunk)[-8192:]

    async def _read_message(self) -> tuple[dict[str, Any], list[bytes]]:
        if self._proc is None or self._proc.stdout is None:
            raise EOFError("the sandbox was closed")
        stdout = self._proc.stdout  # held: a concurrent close() drops self._proc
        try:
            raw = await stdout.readexactly(_HEADER.size)
            (n,) = _HEADER.unpack(raw)
            if n > _MAX_HEADER_BYTES:
                raise ValueError(f"sandbox sent a {n}-byte header (limit {_MAX_HEADER_BYTES})")
            header = json.loads(await stdout.readexactly(n))
            if not isinstance(header, dict):
                raise ValueError("sandbox header is not an object")
            blobs = [await stdout.readexactly(size) for size in self._blob_sizes(header)]
        except asyncio.IncompleteReadError:
            raise EOFError("sandbox closed its output") from None
        return header, blobs

    def _blob_sizes(self, header: dict[str, Any]) -> list[int]:
        shapes = header.get("images") or []
        if not isinstance(shapes, list) or len(shapes) > self.limits.max_images:
            raise ValueError(
                f"sandbox declared {len(shapes)} images (limit {self.limits.max_images})"
            )
        sizes = []
        for s in shapes:
            if (
                not isinstance(s, list)
                or len(s) != 3
                or s[2] != 3
                or not all(isinstance(d, int) and d > 0 for d in s)
                or s[0] * s[1] > self.limits.image_max_pixels
            ):
                raise ValueError(f"sandbox declared an invalid image shape {s!r}")
            sizes.append(s[0] * s[1] * 3)
        return sizes

    async def run(self, code: str) -> RunResult:
        """Execute ``code``; a timeout, crash or protocol violation kills the runtime and is
        reported as an error result (the next ``run`` starts a fresh one)."""
        if not self.alive:
            if self._proc is not None:  # it died between calls: reap it (its fds, its exit) first
                await self.close()
            await self.start()
        proc = self._proc
        if (
            proc is None or proc.stdin is None
        ):  # a concurrent close (an eviction) took it as it started
            return RunResult(
                False,
                "",
                "RuntimeError: the python runtime was closed while it started; "
                "call again (a fresh one starts)",
            )
        self._next_id += 1
        rid = self._next_id
        body = json.dumps({"id": rid, "code": code}).encode()
        try:
            header, blobs = await asyncio.wait_for(
                self._exchange(_HEADER.pack(len(body)) + body), self.limits.wall_s
            )
        except TimeoutError:
            await self.close()
            return RunResult(
                False,
                "",
                f"TimeoutError: the code ran longer than {self.limits.wall_s:g} s "
                "wall time and was killed; the python runtime restarts (variables are lost)",
            )
        except (EOFError, ConnectionError, ValueError) as exc:
            rc = proc.returncode
            await self.close()
            why = _death_reason(rc) if isinstance(exc, EOFError) else str(exc)
            return RunResult(
                False,
                "",
                f"RuntimeError: the python runtime died ({why}); it restarts "
                "on the next call (variables are lost)",
            )
        if header.get("id") != rid:
            await self.close()
            return RunResult(
                False,
                "",
                "RuntimeError: the python runtime answered out of order and was restarted",
            )
        images = tuple(
            np.frombuffer(b, np.uint8).reshape(s) for b, s in zip(blobs, header["images"])
        )
        # the reply shares a process with the model's code, which can forge it: cap it again here
        stdout = _cap(str(header.get("stdout", "")), self.limits.max_output_chars)
        error = (
            None if header.get("error") is None else _cap(str(header["error"]), _MAX_ERROR_CHARS)
        )
        return RunResult(bool(header.get("ok")), stdout, error, images)

    async def _exchange(self, request: bytes) -> tuple[dict[str, Any], list[bytes]]:
        if self._proc is None or self._proc.stdin is None:
            raise EOFError("the sandbox was closed")
        stdin = self._proc.stdin
        stdin.write(request)
        await stdin.drain()
        return await self._read_message()

    def retire(self) -> None:
        """Never start again, and SIGKILL the sandbox now (synchronous); `close` still reaps it
        (and waits for a spawn in progress, whose process it then kills)."""
        self.retired = True
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

    def kill_now(self) -> None:
        """Synchronous SIGKILL of the whole sandbox (for a runtime whose event loop is gone)."""
        proc, self._proc = self._proc, None
        if self._life is not None:
            os.close(self._life)
            self._life = None
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
        """SIGKILL the sandbox and wait until it is gone (`_gone`), at most `_CLOSE_WAIT_S`: every
        close waits for the same exit, also one whose process a concurrent close took. A sandbox
        still alive then (a loaded host, or in the ``rlimits`` mode a ``setsid`` descendant) is
        logged and stays pending in `exited`: the pool counts the runtime until it is done, and
        the runtime's next `start` refuses to run beside it."""
        waited = 0.0
        while (
            self._spawning and waited < _CLOSE_WAIT_S
        ):  # a spawn in progress: take its process too
            await asyncio.sleep(0.01)
            waited += 0.01
        proc, self._proc = self._proc, None
        life, self._life = self._life, None
        if proc is not None:
            # the group only: proc.kill() would poll() first, reaping the killed launcher behind
            # asyncio's child watcher ("Unknown child process pid N, will report returncode 255")
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
            if proc.stdin is not None:
                proc.stdin.close()  # EOF: a runner the kill missed exits on its own
            self._exit, self._exit_pid = asyncio.ensure_future(_gone(proc, life)), proc.pid
        if self._exit is not None and not self._exit.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._exit), _CLOSE_WAIT_S)
            except TimeoutError:
                log.warning(
                    "python sandbox pid %d still runs %g s after SIGKILL; it counts until it exits",
                    self._exit_pid,
                    _CLOSE_WAIT_S,
                )
        if self._drain is not None:
            self._drain.cancel()
            self._drain = None
        if self._launch is not None and self._launch.host_tmp:
            shutil.rmtree(self._launch.host_tmp, ignore_errors=True)
            self._launch.host_tmp = None

    async def exited(self) -> None:
        """Done once every process of the last sandbox `close` killed is gone (unbounded: a
        process that escaped the kill holds it; the pool's count waits here, no caller does)."""
        if self._exit is not None:
            await asyncio.shield(self._exit)


async def _gone(proc: asyncio.subprocess.Process, life: int | None) -> None:
    """The launcher exited AND every process of its sandbox is gone: each holds the write end of
    the ``life`` pipe (inherited, never written by us), so its EOF comes only then. Stdout's EOF
    was not enough: the runner's forked worker holds no protocol pipe and, under bubblewrap, is
    killed with the PID namespace a moment AFTER its init and the runner closed theirs. So a
    runtime counts as closed only when its sandbox processes are (the pool's ``max_runtimes``)."""
    try:
        await proc.wait()
        while life is not None and _held(life):
            await asyncio.sleep(0.01)
    finally:
        if life is not None:
            os.close(life)


def _held(fd: int) -> bool:
    """Whether a process still holds the write end of ``fd``'s pipe (what it wrote is dropped)."""
    try:
        return os.read(fd, 65536) != b""
    except BlockingIOError:
        return True


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


__all__ = [
    "WEAK_REFUSAL",
    "RunResult",
    "SandboxLimits",
    "SandboxRuntime",
    "VideoBinding",
    "isolation_mode",
]
