"""``python(code)`` (PyVision-RL): model-written code in a sandboxed, persistent runtime.

One `SandboxRuntime` per episode, so variables carry across calls; it is released by
``finish(ctx)`` (the ToolSet calls it when the episode ends) or after ``idle_ttl_s`` without calls
(`paravt.tools.sandbox.pool`: admission, ``max_runtimes``, eviction). Only a file the video layer
opens as a video is bound (`paravt.tools.crop.openable_video`, the check crop_video makes): an
item whose "video" is any other file under the video root gets an error, not the file.
Calls of one episode run one at a time, in call order. Inside, the code sees ``video`` (``info``
and ``frames(start, end, n)`` through our decoder, on the read-only bound file), ``np``,
``Image`` (PIL) and ``show(img)``; the result is stdout (capped) plus the shown images as frames.
A timeout, a crash or a limit kills the runtime: the call gets an error and the next call starts
a fresh runtime. See `paravt.tools.sandbox.isolation` for what the isolation covers.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from paravt.errors import ToolCallError, VideoError
from paravt.protocol.prompts import (  # the spec lives with the protocol's others
    PYTHON_SPEC,
    ToolSpec,
)
from paravt.tools.base import Delivery, Observation, ToolContext
from paravt.tools.crop import openable_video
from paravt.tools.sandbox.isolation import SandboxLimits, VideoBinding
from paravt.tools.sandbox.pool import RuntimePool
from paravt.tools.sandbox.runtime import RunResult, SandboxRuntime
from paravt.video.types import Frames


class PythonTool:
    name = "python"
    spec: ToolSpec = PYTHON_SPEC

    def __init__(
        self,
        limits: SandboxLimits = SandboxLimits(),
        *,
        idle_ttl_s: float = 300.0,
        mode: str | None = None,
        max_runtimes: int | None = None,
        weak_isolation: bool = False,
    ) -> None:
        """``max_runtimes``: live sandboxes at most (None: unbounded); admission, eviction and the
        per-owner fair share are `paravt.tools.sandbox.pool`'s. ``weak_isolation``: run without
        bubblewrap (else refused)."""
        self.limits, self.idle_ttl_s, self.mode = limits, idle_ttl_s, mode
        self.max_runtimes, self.weak_isolation = max_runtimes, weak_isolation
        self.timeout_s = limits.wall_s + limits.startup_s + 5.0  # outer guard; wall_s fires first
        self.pool = RuntimePool(max_runtimes=max_runtimes, idle_ttl_s=idle_ttl_s)

    @property
    def active_runtimes(self) -> int:
        return self.pool.alive

    def _runtime(self, ctx: ToolContext) -> SandboxRuntime:
        video = VideoBinding(
            ctx.video,
            dataclasses.asdict(ctx.info),
            ctx.crop_max_frames,
            ctx.crop_max_pixels,
            ctx.size_factor,
        )
        return SandboxRuntime(
            video, self.limits, mode=self.mode, weak_isolation=self.weak_isolation
        )

    async def run(self, ctx: ToolContext, args: Mapping[str, Any]) -> Observation:
        code = args.get("code")
        if not isinstance(code, str) or not code.strip():
            raise ToolCallError(
                f"argument 'code' must be a non-empty string of Python, got {code!r}"
            )
        if not self.pool.has(ctx.episode_id):
            await asyncio.to_thread(
                _bindable, ctx.video
            )  # only a video the video layer opens is bound
        slot = self.pool.admit(ctx.episode_id, ctx.video, lambda: self._runtime(ctx))
        note = ""
        if self.pool.evicted_since_last_call(ctx.episode_id):
            note = (
                "[note: this episode's python runtime was evicted "
                f"(max_runtimes={self.max_runtimes}); "
                "earlier variables are lost]\n"
            )
        try:
            async with slot.lock:
                if slot.evicted is not None:
                    raise ToolCallError(
                        f"this episode's python runtime was {slot.evicted} before the call ran; "
                        "call again (a fresh runtime starts)"
                    )
                await slot.wait_predecessor()
                try:
                    result = await slot.runtime.run(code)
                except asyncio.CancelledError:  # the ToolSet's timeout: the code may still run
                    await slot.runtime.close()
                    raise
                except ToolCallError:  # it did not start: because the pool took it away?
                    if slot.evicted is None:
                        raise
                    result = RunResult(False, "", None)
        finally:
            self.pool.done(slot)
        if not result.ok and slot.evicted is not None:
            result = dataclasses.replace(
                result,
                error=f"RuntimeError: this episode's python runtime was "
                f"{slot.evicted} while the code ran; call again (variables are lost)",
            )
        return _observation(result, note)

    async def finish(self, ctx: ToolContext) -> None:
        await self.pool.release(ctx.episode_id)

    async def aclose(self) -> None:
        await self.pool.aclose()


def _bindable(path: str) -> None:
    """`ToolCallError` unless ``path`` passes the video layer's check (`crop.openable_video`)."""
    try:
        openable_video(path)
    except VideoError as exc:
        raise ToolCallError(f"the python tool binds only the episode's video, and {exc}") from None


def _observation(result: RunResult, note: str) -> Observation:
    frames = _as_frames(result.images)
    text = (
        result.stdout
        if result.ok
        else (result.stdout + ("\n" if result.stdout else "") + (result.error or ""))
    )
    text = note + text
    metrics = {"images": float(len(result.images)), "stdout_chars": float(len(result.stdout))}
    # images the code made are shown inline
    delivery: Delivery = "inline" if frames is not None else "text"
    if not result.ok:
        return Observation(
            text=text.strip() or "Error",
            frames=frames,
            error=result.error,
            delivery=delivery,
            metrics=metrics,
        )
    return Observation(
        text=text.strip() or "(no output)", frames=frames, delivery=delivery, metrics=metrics
    )


def _as_frames(images: tuple[np.ndarray, ...]) -> Frames | None:
    """Shown images as one Frames (same size by construction); timestamps = show order."""
    if not images:
        return None
    return Frames(np.stack(images), tuple(float(i) for i in range(len(images))))
