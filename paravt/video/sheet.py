"""Contact sheet: a grid of thumbnails with each frame's timestamp written underneath.

Used by ``paravt video frames`` and by the eval report to show what a model actually saw.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from paravt.errors import VideoError
from paravt.video.types import Frames

_LABEL_HEIGHT = 16
_PAD = 4
_BACKGROUND = (24, 24, 24)
_TEXT = (235, 235, 235)


def format_timestamp(t: float) -> str:
    """``83.25`` → ``"1:23.25"``; under a minute ``"7.50s"``."""
    if t < 60:
        return f"{t:.2f}s"
    minutes, seconds = divmod(t, 60.0)
    return f"{int(minutes)}:{seconds:05.2f}"


def contact_sheet(frames: Frames, *, cols: int = 8, thumb_width: int = 160) -> Image.Image:
    """A grid of ``cols`` columns; each cell is a ``thumb_width``-wide thumbnail (aspect kept)
    with its timestamp written below. Returns an RGB PIL image."""
    if len(frames) == 0:
        raise VideoError("no frames to put on a contact sheet; sample at least one frame")
    if cols <= 0 or thumb_width <= 0:
        raise VideoError(f"cols={cols}, thumb_width={thumb_width}: both must be ≥ 1")
    cols = min(cols, len(frames))
    rows = math.ceil(len(frames) / cols)
    thumb_h = max(1, round(frames.height * thumb_width / frames.width))
    cell_w, cell_h = thumb_width + _PAD, thumb_h + _LABEL_HEIGHT + _PAD
    sheet = Image.new("RGB", (cols * cell_w + _PAD, rows * cell_h + _PAD), _BACKGROUND)
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default()
    for i, (array, t) in enumerate(zip(frames.array, frames.timestamps, strict=True)):
        x = _PAD + (i % cols) * cell_w
        y = _PAD + (i // cols) * cell_h
        thumb = Image.fromarray(np.ascontiguousarray(array)).resize(
            (thumb_width, thumb_h), Image.Resampling.BILINEAR
        )
        sheet.paste(thumb, (x, y))
        draw.text((x + 2, y + thumb_h + 2), f"#{i}  {format_timestamp(t)}", fill=_TEXT, font=font)
    return sheet
