"""``python(code)`` (PyVision-RL): model-written code in a sandboxed, persistent runtime.

One `SandboxRuntime` per episode, so variables carry across calls; it is released by
``finish(ctx)`` (the ToolSet calls it when the episode ends) or after ``idle_ttl_s`` without calls.
Calls of one episode run one at a time, in call order. Inside, the code sees ``video`` (``info``
and ``frames(start, end, n)`` through our decoder, on the read-only bound file), ``np``,
``Image`` (PIL) and ``show(img)``; the result is stdout (capped) plus the shown images as frames.
A timeout, a crash or a limit kills the runtime: the call gets an error and the next call starts
a fresh runtime. See `paravt.tools.sandbox.runtime` for what the isolation covers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from paravt.errors import ToolCallError
from paravt.protocol.prompts import ToolSpec
from paravt.tools.base import Observation, ToolContext
from paravt.tools.sandbox.runtime import SandboxLimits, SandboxRuntime, VideoBinding
from paravt.video.types import Frames

PYTHON_SPEC = ToolSpec(
    name="python",
    description=("Run Python code on the video. `video.info` (duration, fps, width, height) and "
                 "`video.frames(start, end, n)` (uint8 n×H×W×3) are available, with numpy as `np` "
                 "and PIL's `Image`; call `show(img)` to look at an image. Variables persist "
                 "across calls; printed output is returned."),
    parameters={
        "type": "object",
        "properties": {"code": {"type": "string", "description": "Python source",
                                "examples": ["f = video.frames(0, 10, 4)\nprint(f.mean(axis=(1, 2, 3)))"]}},
        "required": ["code"],
    },
)


@dataclasses.dataclass
class _Slot:
    runtime: SandboxRuntime
    lock: asyncio.Lock
    last_used: float
    loop: asyncio.AbstractEventLoop
    video: str  # the runtime is bound to this video for its whole life

    async def release(self) -> None:
        if self.loop is asyncio.get_running_loop():
            await self.runtime.close()
        else:
            self.runtime.kill_now()


class PythonTool:
    name = "python"
    spec: ToolSpec = PYTHON_SPEC

    def __init__(self, limits: SandboxLimits = SandboxLimits(), *, idle_ttl_s: float = 300.0,
                 mode: str | None = None, max_runtimes: int | None = None, weak_isolation: bool = False) -> None:
        """``max_runtimes``: live runtimes at most (None: unbounded); a new episode then evicts the
        least recently used idle one. ``weak_isolation``: run without bubblewrap (else refused)."""
        self.limits, self.idle_ttl_s, self.mode = limits, idle_ttl_s, mode
        self.max_runtimes, self.weak_isolation = max_runtimes, weak_isolation
        self.timeout_s = limits.wall_s + limits.startup_s + 5.0  # outer guard; wall_s fires first
        self._slots: dict[str, _Slot] = {}
        self._evicted: dict[str, None] = {}  # recently evicted keys (bounded), to tell the episode
        self._reaper: asyncio.Task | None = None

    @property
    def active_runtimes(self) -> int:
        return sum(1 for s in self._slots.values() if s.runtime.alive)

    async def _slot(self, ctx: ToolContext) -> _Slot:
        slot = self._slots.get(ctx.episode_id)
        loop = asyncio.get_running_loop()
        if slot is not None and slot.loop is not loop:  # the caller moved to a new event loop
            slot.runtime.kill_now()
            self._slots.pop(ctx.episode_id, None)
            slot = None
        if slot is not None and slot.video != ctx.video:
            raise ToolCallError("this episode id already has a python runtime bound to another video; "
                                "use a fresh episode id per episode")
        if slot is None:
            if not os.path.isfile(ctx.video):  # never bind a directory (e.g. "/") into the sandbox
                raise ToolCallError("the episode's video is not a regular file; the python tool binds only its video")
            await self._make_room()
            info = dataclasses.asdict(ctx.info)
            video = VideoBinding(ctx.video, info, ctx.crop_max_frames, ctx.crop_max_pixels, ctx.size_factor)
            runtime = SandboxRuntime(video, self.limits, mode=self.mode, weak_isolation=self.weak_isolation)
            slot = _Slot(runtime, asyncio.Lock(), time.monotonic(), loop, ctx.video)
            self._slots[ctx.episode_id] = slot
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.create_task(self._reap())
        return slot

    async def _make_room(self) -> None:
        """Evict the least recently used idle runtime when ``max_runtimes`` are live."""
        if self.max_runtimes is None or len(self._slots) < self.max_runtimes:
            return
        idle = [(s.last_used, k) for k, s in self._slots.items() if not s.lock.locked()]
        if not idle:
            raise ToolCallError(f"all {len(self._slots)} python runtimes are busy (max_runtimes="
                                f"{self.max_runtimes}); retry this call later")
        _, key = min(idle)
        victim = self._slots.pop(key)
        self._evicted[key] = None
        while len(self._evicted) > 4 * self.max_runtimes:
            self._evicted.pop(next(iter(self._evicted)))
        await victim.release()

    async def run(self, ctx: ToolContext, args: Mapping[str, Any]) -> Observation:
        code = args.get("code")
        if not isinstance(code, str) or not code.strip():
            raise ToolCallError(f"argument 'code' must be a non-empty string of Python, got {code!r}")
        slot = await self._slot(ctx)
        note = ""
        if self._evicted.pop(ctx.episode_id, "kept") is None:
            note = (f"[note: this episode's python runtime was evicted (max_runtimes={self.max_runtimes}); "
                    "earlier variables are lost]\n")
        async with slot.lock:
            slot.last_used = time.monotonic()
            try:
                result = await slot.runtime.run(code)
            except asyncio.CancelledError:  # the ToolSet's timeout: the code may still run
                await slot.runtime.close()
                raise
            slot.last_used = time.monotonic()
        frames = _as_frames(result.images)
        text = result.stdout if result.ok else (result.stdout + ("\n" if result.stdout else "") + (result.error or ""))
        text = note + text
        metrics = {"images": float(len(result.images)), "stdout_chars": float(len(result.stdout))}
        delivery = "inline" if frames is not None else "text"  # images the code made are shown inline
        if not result.ok:
            return Observation(text=text.strip() or "Error", frames=frames, error=result.error, delivery=delivery,
                               metrics=metrics)
        return Observation(text=text.strip() or "(no output)", frames=frames, delivery=delivery, metrics=metrics)

    async def finish(self, ctx: ToolContext) -> None:
        slot = self._slots.pop(ctx.episode_id, None)
        self._evicted.pop(ctx.episode_id, None)
        if slot is not None and slot.loop is not asyncio.get_running_loop():
            slot.runtime.kill_now()
        elif slot is not None:
            async with slot.lock:
                await slot.runtime.close()

    async def _reap(self) -> None:
        while self._slots:
            await asyncio.sleep(min(5.0, max(0.05, self.idle_ttl_s / 4)))
            now = time.monotonic()
            for key, slot in list(self._slots.items()):
                if now - slot.last_used > self.idle_ttl_s and not slot.lock.locked():
                    self._slots.pop(key, None)
                    await slot.runtime.close()

    async def aclose(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        for key in list(self._slots):
            await self._slots.pop(key).release()


def _as_frames(images: tuple[np.ndarray, ...]) -> Frames | None:
    """Shown images as one Frames (same size by construction); timestamps = show order."""
    if not images:
        return None
    return Frames(np.stack(images), tuple(float(i) for i in range(len(images))))
