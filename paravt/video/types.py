"""Value types of the video layer (shared by tools, agent, data and trainers)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class VideoInfo:
    """What `probe` reads from a container's first video stream."""

    path: str
    duration: float  # seconds, from the stream (or container) duration, start pts removed
    fps: float  # average frame rate
    num_frames: int  # counted or estimated (duration * fps) when the header has none
    width: int  # as displayed (after the rotation)
    height: int
    codec: str
    start_time: float = 0.0  # pts of the first frame in seconds (non-zero for some files)
    rotation: int = 0  # degrees counter-clockwise applied to decoded frames (0, 90, 180, 270)


@dataclass(frozen=True, eq=False)
class Frames:
    """Decoded frames: ``array`` is uint8 T×H×W×3 (RGB); ``timestamps[i]`` is the exact
    presentation time (seconds, relative to the video start) of frame i."""

    array: np.ndarray
    timestamps: tuple[float, ...]

    def __post_init__(self) -> None:
        assert self.array.ndim == 4 and self.array.shape[-1] == 3, self.array.shape
        assert self.array.dtype == np.uint8, self.array.dtype
        assert len(self.timestamps) == self.array.shape[0]

    def __len__(self) -> int:
        return int(self.array.shape[0])

    @property
    def height(self) -> int:
        return int(self.array.shape[1])

    @property
    def width(self) -> int:
        return int(self.array.shape[2])
