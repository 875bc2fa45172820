"""Small barcoded videos written once per session: frame i carries its index in a barcode.

Each fixture returns ``(path, times)`` where ``times[i]`` is the true presentation time (seconds
from the first frame) of frame i, so tests can compute which frame is nearest to any target.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from video_helpers import FPS, barcoded

from paravt.video import Encoding, write_video


@pytest.fixture(scope="session")
def video_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(tmp_path_factory.mktemp("videos"))


@pytest.fixture(scope="session")
def bframes_video(video_dir: Path) -> tuple[Path, list[float]]:
    """4 s at 25 fps (100 frames), keyframe every 25, B-frames."""
    path = write_video(
        video_dir / "bframes.mp4", barcoded(100), FPS, encoding=Encoding(gop=25, bframes=True)
    )
    return path, [i / FPS for i in range(100)]


@pytest.fixture(scope="session")
def vfr_video(video_dir: Path) -> tuple[Path, list[float]]:
    """60 frames with irregular gaps (0.02–0.3 s), B-frames, keyframe every 20."""
    gaps = np.random.default_rng(7).choice([0.02, 0.04, 0.1, 0.3], size=60)
    times = [0.0, *np.cumsum(gaps[:-1]).round(4).tolist()]
    path = write_video(
        video_dir / "vfr.mp4", barcoded(60), FPS, timestamps=times, encoding=Encoding(gop=20)
    )
    return path, times


@pytest.fixture(scope="session")
def offset_audio_video(video_dir: Path) -> tuple[Path, list[float]]:
    """50 frames at 25 fps starting at pts 1.5 s, with a silent AAC stream (stream 0)."""
    path = write_video(
        video_dir / "offset_audio.mp4",
        barcoded(50),
        FPS,
        start_pts_s=1.5,
        encoding=Encoding(gop=12, audio=True),
    )
    return path, [i / FPS for i in range(50)]


@pytest.fixture(scope="session")
def long_video(video_dir: Path) -> tuple[Path, list[float]]:
    """24 s at 25 fps (600 frames), keyframe every 25 frames (1 s), no B-frames."""
    path = write_video(
        video_dir / "long.mp4", barcoded(600), FPS, encoding=Encoding(gop=25, bframes=False)
    )
    return path, [i / FPS for i in range(600)]
