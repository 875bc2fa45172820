"""Video layer: probe, window sampling with keyframe seek, a per-process cache, and a synthetic
H.264 writer with drawing helpers (DESIGN.md §1, `video/`)."""

from __future__ import annotations

from paravt.video import draw
from paravt.video.types import Frames, VideoInfo
from paravt.video.writer import write_video

__all__ = ["Frames", "VideoInfo", "draw", "write_video"]
