"""Fixtures of the model tests: loaded tiny policies and frames decoded from a real mp4."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import av
import numpy as np
import pytest

from paravt.models.hf.loading import LoadedPolicy, load_policy
from paravt.video.types import Frames


def _write_and_decode(path: Path, n: int = 8, size: int = 64, fps: int = 2) -> Frames:
    """Write an H.264 mp4 of n coloured frames with PyAV, then decode it back (real pixels, real
    presentation timestamps)."""
    rng = np.random.default_rng(0)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width = stream.height = size
        stream.pix_fmt = "yuv420p"
        for _ in range(n):
            img = np.full((size, size, 3), rng.integers(0, 255, 3), dtype=np.uint8)
            for pkt in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(pkt)
        for pkt in stream.encode():
            out.mux(pkt)
    arrays, times = [], []
    with av.open(str(path)) as inp:
        for frame in inp.decode(video=0):
            arrays.append(frame.to_ndarray(format="rgb24"))
            times.append(float(frame.pts * frame.time_base))
    return Frames(array=np.stack(arrays), timestamps=tuple(t - times[0] for t in times))


@pytest.fixture(scope="session")
def video_frames(tmp_path_factory: pytest.TempPathFactory) -> Frames:
    return _write_and_decode(tmp_path_factory.mktemp("video") / "clip.mp4")


@pytest.fixture(scope="session")
def loaded_policy(tiny_model_dir: Callable[..., str]) -> Callable[[str], LoadedPolicy]:
    cache: dict[str, LoadedPolicy] = {}

    def get(family: str) -> LoadedPolicy:
        if family not in cache:
            cache[family] = load_policy(tiny_model_dir(family, "xs"))
        return cache[family]

    return get
