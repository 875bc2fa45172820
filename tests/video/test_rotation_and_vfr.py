"""Issue 13 item 12 with real H.264 mp4 files: frames come out upright and a VFR tail is reachable.

Reproduced breaks: a file with a display matrix of 90° decoded sideways (and probed with the
stored, not the displayed, size); a variable-frame-rate file whose header duration (the sum of
nominal frame durations, 3.5 s here) understates its presentation times (last frame at 9.5 s)
made every frame after 3.5 s unreachable (`VideoError`: window outside the video).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from paravt.video import Encoding, frames_at, probe, sample_frames, smart_resize, write_video
from paravt.video.draw import solid

H, W = 32, 64  # stored landscape
QUADRANTS = {
    (0, 0): (250, 20, 20),
    (0, 1): (20, 250, 20),
    (1, 0): (20, 20, 250),
    (1, 1): (250, 250, 20),
}


def _quadrant_image() -> np.ndarray:
    img = np.zeros((H, W, 3), np.uint8)
    for (qy, qx), colour in QUADRANTS.items():
        img[qy * H // 2 : (qy + 1) * H // 2, qx * W // 2 : (qx + 1) * W // 2] = colour
    return img


def _quadrant_colours(img: np.ndarray) -> dict[tuple[int, int], tuple[int, ...]]:
    h, w = img.shape[:2]
    return {
        (qy, qx): tuple(
            int(round(c / 10))
            for c in img[
                qy * h // 2 + h // 8 : (qy + 1) * h // 2 - h // 8,
                qx * w // 2 + w // 8 : (qx + 1) * w // 2 - w // 8,
            ]
            .reshape(-1, 3)
            .mean(0)
        )
        for qy in (0, 1)
        for qx in (0, 1)
    }


@pytest.mark.parametrize("degrees", [90, 180, 270, -90])
def test_display_rotation_is_applied(degrees: int, tmp_path: Path) -> None:
    path = write_video(
        tmp_path / f"rot{degrees}.mp4",
        [_quadrant_image()] * 6,
        fps=2.0,
        rotation=degrees,
        encoding=Encoding(crf=10),
    )
    info = probe(path)
    k = (degrees // 90) % 4
    assert info.rotation == 90 * k
    assert (info.height, info.width) == ((W, H) if k % 2 else (H, W))
    frames = sample_frames(path, 0.0, info.duration, nframes=2)
    upright = np.rot90(_quadrant_image(), k)  # counter-clockwise, as a player shows it
    assert frames.array.shape[1:3] == upright.shape[:2]
    assert _quadrant_colours(frames.array[0]) == _quadrant_colours(upright)


def test_resize_budget_applies_to_the_displayed_size(tmp_path: Path) -> None:
    path = write_video(
        tmp_path / "rot.mp4",
        [_quadrant_image()] * 4,
        fps=2.0,
        rotation=90,
        encoding=Encoding(crf=10),
    )
    frames = sample_frames(path, 0.0, 2.0, nframes=1, max_pixels=16 * 32, size_factor=8)
    assert frames.array.shape[1:3] == smart_resize(W, H, max_pixels=16 * 32, factor=8)  # portrait
    assert frames.height > frames.width


def test_unrotated_file_is_unchanged(tmp_path: Path) -> None:
    path = write_video(
        tmp_path / "plain.mp4", [_quadrant_image()] * 4, fps=2.0, encoding=Encoding(crf=10)
    )
    info = probe(path)
    assert (info.rotation, info.height, info.width) == (0, H, W)
    assert _quadrant_colours(sample_frames(path, 0, 2.0, nframes=1).array[0]) == _quadrant_colours(
        _quadrant_image()
    )


def test_frames_past_an_understated_header_duration_are_reachable(tmp_path: Path) -> None:
    times = [0.0, 0.5, 1.0, 1.5, 2.0, 9.0, 9.5]
    colours = [(20 + 30 * i, 200 - 25 * i, 90) for i in range(len(times))]
    path = write_video(
        tmp_path / "vfr.mp4", [solid(32, 32, c) for c in colours], fps=2.0, timestamps=times
    )
    info = probe(path)
    assert info.duration >= 9.5  # the header alone says 3.5 s
    frames = frames_at(path, [9.0, 9.5])
    assert frames.timestamps == (9.0, 9.5)
    for img, colour in zip(frames.array, colours[-2:], strict=True):
        assert np.abs(img.reshape(-1, 3).mean(0) - colour).max() < 8
    window = sample_frames(path, 8.0, info.duration, nframes=2)
    assert window.timestamps == (9.0, 9.5)
