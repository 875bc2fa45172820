"""``frame_select(start_time, end_time, nframes, resize)`` (EVA): frames returned inline.

Rules, in order:
1. the window is clamped to the video;
2. ``resize`` ∈ (0, 1] scales the native resolution; the frame size is then Qwen's smart resize
   (multiples of ``ctx.size_factor``) of the scaled pixel count, so frame pixels = H × W after it;
3. at most 1 frame per second of window: ``nframes ≤ max(1, floor(end − start))``;
4. visual budget (`VisualBudget`): nframes × frame pixels must fit the per-call budget and what
   is left of the episode's budget; nframes is lowered to fit, and the call fails when not even
   one frame fits (the text says so and how much is left).
The observation text reports the frames served and the budget used / remaining.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from typing import Any

from paravt.errors import ToolCallError, VideoError
from paravt.protocol.prompts import (  # in protocol: the parser's defaults
    FRAME_SELECT_SPEC,
    ToolSpec,
)
from paravt.tools.base import Observation, ToolContext, number_arg, window_text
from paravt.video import sample_frames, smart_resize

MAX_FPS = 1.0


def plan_frames(
    ctx: ToolContext, start: float, end: float, nframes: int, resize: float
) -> tuple[int, int, int]:
    """(frames to serve, max_pixels to ask the decoder, H × W it will return) under rules 2–4;
    pure (the budget is not charged here)."""
    if not 0 < resize <= 1:
        raise ToolCallError(f"resize={resize:g} is outside (0, 1]; pass a scale such as 0.5")
    if nframes < 1:
        raise ToolCallError(f"nframes={nframes} must be ≥ 1")
    info = ctx.info
    target = max(1, int(info.width * info.height * resize * resize))
    h, w = smart_resize(info.height, info.width, max_pixels=target, factor=ctx.size_factor)
    frame_px = h * w
    n = min(nframes, max(1, math.floor((end - start) * MAX_FPS + 1e-9)))
    n = min(n, ctx.budget.affordable_frames(frame_px))
    if n < 1:
        raise ToolCallError(
            f"one {w}×{h} frame ({frame_px:,} px) exceeds the visual budget: "
            f"{ctx.budget.remaining:,} px "
            f"left this episode, {ctx.budget.per_call_pixels:,} per call; lower resize or answer "
            "now"
        )
    return n, target, frame_px


class FrameSelect:
    name = "frame_select"
    spec: ToolSpec = FRAME_SELECT_SPEC
    timeout_s = 60.0

    async def run(self, ctx: ToolContext, args: Mapping[str, Any]) -> Observation:
        # Everything up to the charge is synchronous, so concurrent calls of one turn are charged
        # in call order (deterministic locally and on the tool server).
        start, end = ctx.clamp(number_arg(args, "start_time"), number_arg(args, "end_time"))
        asked = int(number_arg(args, "nframes"))
        resize = number_arg(args, "resize", default=1.0)
        n, target, frame_px = plan_frames(ctx, start, end, asked, resize)
        ctx.budget.charge(n * frame_px)
        try:
            frames = await asyncio.to_thread(
                sample_frames,
                ctx.video,
                start,
                end,
                nframes=n,
                max_pixels=target,
                size_factor=ctx.size_factor,
            )
        except VideoError as exc:
            return Observation.failure(
                f"could not decode the video window: {exc}", window=(start, end)
            )
        b = ctx.budget
        capped = f" (asked {asked}; capped by 1 fps and the budget)" if n < asked else ""
        text = (
            f"{window_text(frames, start, end)}{capped}. Visual budget: used {b.used_pixels:,} of "
            f"{b.per_episode_pixels:,} px this episode, {b.remaining:,} px left."
        )
        return Observation(
            text=text,
            frames=frames,
            window=(start, end),
            delivery="inline",
            metrics={
                "frames": float(n),
                "pixels": float(n * frame_px),
                "budget_remaining": float(b.remaining),
            },
        )
