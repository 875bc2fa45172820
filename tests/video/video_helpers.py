"""Helpers shared by the video tests (importable: pytest puts this directory on sys.path)."""

from __future__ import annotations

import numpy as np

from paravt.video import draw

FPS = 25
H, W = 48, 64


def barcoded(n: int, h: int = H, w: int = W) -> list[np.ndarray]:
    names = list(draw.COLORS)
    frames = []
    for i in range(n):
        img = draw.solid(h, w, draw.COLORS[names[(i // 10) % len(names)]])
        draw.fill_circle(img, (3 * i) % w, h * 2 // 3, 6, (0, 0, 0))  # motion, so P/B-frames differ
        draw.barcode(img, i)
        frames.append(img)
    return frames


def nearest_index(times: list[float], t: float) -> int:
    """Index of the frame time nearest ``t`` (ties to the earlier frame)."""
    return min(range(len(times)), key=lambda i: (abs(times[i] - t), i))
