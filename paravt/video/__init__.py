"""Video layer: probe, window sampling with keyframe seek, a per-process cache, and a synthetic
H.264 writer with drawing helpers (docs/ARCHITECTURE.md §1, `video/`)."""

from __future__ import annotations

from paravt.video import draw
from paravt.video.budget import frame_count, overview_count, smart_resize, target_times
from paravt.video.cache import VideoDecodeStats, clear_cache, decode_stats
from paravt.video.decode import frames_at, sample_frames, sample_overview
from paravt.video.probe import probe
from paravt.video.types import Frames, VideoInfo
from paravt.video.writer import Encoding, write_video

__all__ = [
    "Frames",
    "VideoDecodeStats",
    "VideoInfo",
    "clear_cache",
    "decode_stats",
    "draw",
    "frame_count",
    "frames_at",
    "overview_count",
    "probe",
    "sample_frames",
    "sample_overview",
    "smart_resize",
    "target_times",
    "Encoding",
    "write_video",
]
