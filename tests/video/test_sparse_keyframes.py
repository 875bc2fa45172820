"""Regression: sparse sampling of a long video whose keyframes are irregular (scene cuts).

The decoder once re-seeked before filling any target when the distance to the target exceeded the
GOP interval estimated from the few keyframes seen so far, and looped forever.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from paravt.video import Encoding, sample_frames, write_video
from paravt.video.draw import solid


@pytest.mark.timeout(60)
def test_sparse_overview_with_scene_cut_keyframes_terminates(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    frames, colour = [], (90, 90, 90)
    for i in range(274):  # 274 s at 1 fps; abrupt scene changes make x264 insert extra keyframes
        if i in (3, 50, 51, 130, 200):
            colour = tuple(int(c) for c in rng.integers(0, 255, 3))
        frames.append(solid(64, 64, colour))
    path = write_video(tmp_path / "v.mp4", frames, fps=1.0, encoding=Encoding(gop=20))
    got = sample_frames(path, 0.0, 274.0, nframes=8, max_pixels=64 * 64)
    # targets (i + 0.5) * 274 / 8 = 17.1, 51.4, ...: each returned frame is the nearest one
    expected = [round((i + 0.5) * 274 / 8) for i in range(8)]
    assert [round(t) for t in got.timestamps] == pytest.approx(expected, abs=1)
