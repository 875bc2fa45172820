"""``crop_video(start_time, end_time)``: frames of one window for a sub-agent
(docs/ARCHITECTURE.md §2).

The window is clamped to the video (the parser already normalised the times); at most
``ctx.crop_max_frames`` frames are sampled at ≤ ``ctx.crop_fps`` with ``ctx.crop_max_pixels``.
A decode failure (broken file) becomes an error observation, never an exception.
`openable_video` is the check every tool that hands the episode's file to code uses (the python
tool binds only a file that passes it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from paravt.errors import VideoError
from paravt.protocol.prompts import CROP_VIDEO_SPEC, ToolSpec
from paravt.tools.base import Observation, ToolContext, number_arg, window_text
from paravt.video import probe, sample_frames
from paravt.video.types import Frames, VideoInfo


def openable_video(path: str) -> VideoInfo:
    """The video layer's own check that ``path`` is a video it can open (a regular, non-empty file
    with a video stream: `paravt.video.probe`); `VideoError` naming the file otherwise. Crops and
    the python tool both go through it, so neither serves a file the other refuses."""
    return probe(path)


def _window(ctx: ToolContext, start: float, end: float) -> Frames:
    openable_video(ctx.video)
    return sample_frames(
        ctx.video,
        start,
        end,
        fps=ctx.crop_fps,
        max_frames=ctx.crop_max_frames,
        max_pixels=ctx.crop_max_pixels,
        size_factor=ctx.size_factor,
        whole=True,
    )


class CropVideo:
    name = "crop_video"
    spec: ToolSpec = CROP_VIDEO_SPEC
    timeout_s = 60.0

    async def run(self, ctx: ToolContext, args: Mapping[str, Any]) -> Observation:
        start, end = ctx.clamp(number_arg(args, "start_time"), number_arg(args, "end_time"))
        try:
            frames = await asyncio.to_thread(_window, ctx, start, end)
        except VideoError as exc:
            return Observation.failure(
                f"could not decode the video window: {exc}", window=(start, end)
            )
        return Observation(
            text=window_text(frames, start, end),
            frames=frames,
            window=(start, end),
            delivery="subagent",
            metrics={"frames": float(len(frames))},
        )
