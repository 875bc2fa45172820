"""``crop_video(start_time, end_time)``: frames of one window for a sub-agent (DESIGN §2).

The window is clamped to the video (the parser already normalised the times); at most
``ctx.crop_max_frames`` frames are sampled at ≤ ``ctx.crop_fps`` with ``ctx.crop_max_pixels``.
A decode failure (broken file) becomes an error observation, never an exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from paravt.errors import VideoError
from paravt.protocol.prompts import CROP_VIDEO_SPEC, ToolSpec
from paravt.tools.base import Observation, ToolContext, number_arg, window_text
from paravt.video import sample_frames


class CropVideo:
    name = "crop_video"
    spec: ToolSpec = CROP_VIDEO_SPEC
    timeout_s = 60.0

    async def run(self, ctx: ToolContext, args: Mapping[str, Any]) -> Observation:
        start, end = ctx.clamp(number_arg(args, "start_time"), number_arg(args, "end_time"))
        try:
            frames = await asyncio.to_thread(
                sample_frames, ctx.video, start, end, fps=ctx.crop_fps, max_frames=ctx.crop_max_frames,
                max_pixels=ctx.crop_max_pixels, size_factor=ctx.size_factor)
        except VideoError as exc:
            return Observation.failure(f"could not decode the video window: {exc}", window=(start, end))
        return Observation(text=window_text(frames, start, end), frames=frames, window=(start, end),
                           delivery="subagent", metrics={"frames": float(len(frames))})
