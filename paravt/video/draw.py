"""Pure numpy drawing on uint8 H×W×3 RGB images, for synthetic videos and tests.

Everything here is deliberately *big*: full-frame colours, 7-segment digits that fill a box, and a
barcode of large black/white blocks. Small details do not survive H.264 at small frame sizes, and a
tiny model cannot learn them in minutes on a CPU (../shared/NOTES-ENV.md, outside the repository:
"What a tiny model can learn").

Coordinates follow numpy slicing: ``x`` is the column, ``y`` the row, ``x1``/``y1`` are exclusive,
and every rectangle is clipped to the image (drawing partly or wholly outside is not an error).
"""

from __future__ import annotations

import numpy as np

from paravt.errors import VideoError

RGB = tuple[int, int, int]

#: Well-separated, saturated colours that survive yuv420p + H.264 and can be told apart by
#: `nearest_color`. Black and mid grey are left out on purpose: they are backgrounds/barcode ink.
COLORS: dict[str, RGB] = {
    "red": (220, 30, 30),
    "green": (30, 180, 50),
    "blue": (30, 60, 225),
    "yellow": (240, 220, 30),
    "cyan": (30, 210, 220),
    "magenta": (210, 40, 200),
    "orange": (250, 140, 20),
    "white": (245, 245, 245),
}

# Which of the seven segments (a b c d e f g) are lit for each digit.
#   a = top, b = top right, c = bottom right, d = bottom, e = bottom left, f = top left, g = middle
_SEGMENTS: dict[int, str] = {
    0: "abcdef",
    1: "bc",
    2: "abdeg",
    3: "abcdg",
    4: "bcfg",
    5: "acdfg",
    6: "acdefg",
    7: "abc",
    8: "abcdefg",
    9: "abcdfg",
}


def _check_image(img: np.ndarray) -> None:
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise VideoError(
            f"image has shape {img.shape} and dtype {img.dtype}; drawing needs a uint8 H×W×3 RGB "
            "array (build one with draw.solid(h, w, rgb))"
        )


def solid(h: int, w: int, rgb: RGB) -> np.ndarray:
    """A new uint8 h×w×3 image filled with ``rgb``."""
    if h <= 0 or w <= 0:
        raise VideoError(f"image size {h}×{w} must be positive in both dimensions")
    return np.full((h, w, 3), np.asarray(rgb, dtype=np.uint8), dtype=np.uint8)


def fill_rect(img: np.ndarray, x0: int, y0: int, x1: int, y1: int, rgb: RGB) -> None:
    """Fill columns [x0, x1) × rows [y0, y1) in place (clipped to the image)."""
    _check_image(img)
    h, w = img.shape[:2]
    xa, xb = max(0, int(x0)), min(w, int(x1))
    ya, yb = max(0, int(y0)), min(h, int(y1))
    if xa < xb and ya < yb:
        img[ya:yb, xa:xb] = np.asarray(rgb, dtype=np.uint8)


def fill_circle(img: np.ndarray, cx: float, cy: float, r: float, rgb: RGB) -> None:
    """Fill the disc of radius ``r`` centred at pixel (cx, cy) in place (clipped)."""
    _check_image(img)
    h, w = img.shape[:2]
    xa, xb = max(0, int(np.floor(cx - r))), min(w, int(np.ceil(cx + r)) + 1)
    ya, yb = max(0, int(np.floor(cy - r))), min(h, int(np.ceil(cy + r)) + 1)
    if xa >= xb or ya >= yb:
        return
    ys, xs = np.ogrid[ya:yb, xa:xb]
    mask = (xs - cx) ** 2 + (ys - cy) ** 2 <= r * r
    img[ya:yb, xa:xb][mask] = np.asarray(rgb, dtype=np.uint8)


def draw_digit(img: np.ndarray, digit: int, x0: int, y0: int, x1: int, y1: int, rgb: RGB) -> None:
    """Draw one 7-segment ``digit`` (0–9) filling the box [x0, x1) × [y0, y1), in place.

    Stroke thickness is a fifth of the box's smaller side (at least 1 px), so a digit in a
    40×60 box has 8 px strokes.
    """
    if digit not in _SEGMENTS:
        raise VideoError(f"digit {digit!r} is not in 0..9; draw larger numbers with draw_number")
    w, h = x1 - x0, y1 - y0
    if w <= 0 or h <= 0:
        raise VideoError(f"digit box ({x0}, {y0}, {x1}, {y1}) is empty; need x1 > x0 and y1 > y0")
    t = max(1, min(w, h) // 5)
    ym = y0 + (h - t) // 2  # top row of the middle bar
    boxes = {
        "a": (x0, y0, x1, y0 + t),
        "g": (x0, ym, x1, ym + t),
        "d": (x0, y1 - t, x1, y1),
        "f": (x0, y0, x0 + t, ym + t),
        "b": (x1 - t, y0, x1, ym + t),
        "e": (x0, ym, x0 + t, y1),
        "c": (x1 - t, ym, x1, y1),
    }
    for seg in _SEGMENTS[digit]:
        fill_rect(img, *boxes[seg], rgb)


def draw_number(img: np.ndarray, n: int, box: tuple[int, int, int, int], rgb: RGB) -> None:
    """Draw the non-negative integer ``n`` as 7-segment digits side by side filling ``box``
    = (x0, y0, x1, y1); a gap of a quarter digit width separates digits."""
    if n < 0:
        raise VideoError(f"number {n} is negative; draw_number draws non-negative integers only")
    x0, y0, x1, y1 = box
    text = str(int(n))
    k = len(text)
    # k digits of width d and k-1 gaps of d/4: k*d + (k-1)*d/4 = x1 - x0
    d = (x1 - x0) / (k + (k - 1) / 4)
    if d < 1 or y1 <= y0:
        raise VideoError(f"box {box} is too small for {k} digit(s); widen it or draw fewer digits")
    for i, ch in enumerate(text):
        left = x0 + i * d * 1.25
        draw_digit(img, int(ch), round(left), y0, round(left + d), y1, rgb)


def barcode_strip_height(h: int) -> int:
    """Rows used by `barcode` at the top of an image of height ``h`` (an eighth, ≥ 8 px)."""
    return min(h, max(8, h // 8))


def _block_columns(w: int, bits: int) -> int:
    block = w // bits
    if block < 3:
        raise VideoError(
            f"width {w} is too narrow for a {bits}-bit barcode (blocks under 3 px do not survive "
            f"H.264); use a width of at least {3 * bits} or fewer bits"
        )
    return block


def barcode(img: np.ndarray, index: int, bits: int = 12) -> None:
    """Write ``index`` into the top strip (`barcode_strip_height` rows) as ``bits`` equal blocks,
    most significant bit on the left: white = 1, black = 0. In place.

    Blocks are ``w // bits`` px wide and read back by `read_barcode` from their centre, so they
    survive yuv420p chroma subsampling and lossy H.264 (tested at 64×48, crf 23).
    """
    _check_image(img)
    if not 0 <= index < (1 << bits):
        raise VideoError(
            f"index {index} does not fit in {bits} bits (0..{(1 << bits) - 1}); raise bits"
        )
    h, w = img.shape[:2]
    block = _block_columns(w, bits)
    sh = barcode_strip_height(h)
    for b in range(bits):
        on = (index >> (bits - 1 - b)) & 1
        fill_rect(img, b * block, 0, (b + 1) * block, sh, (255, 255, 255) if on else (0, 0, 0))


def read_barcode(img: np.ndarray, bits: int = 12) -> int:
    """Read the index written by `barcode` (thresholds each block's central luminance at 128)."""
    _check_image(img)
    h, w = img.shape[:2]
    block = _block_columns(w, bits)
    sh = barcode_strip_height(h)
    inset_x, inset_y = block // 3, sh // 4
    strip = img[inset_y : sh - inset_y].astype(np.float32).mean(axis=2)  # rows × W luminance
    value = 0
    for b in range(bits):
        cell = strip[:, b * block + inset_x : (b + 1) * block - inset_x]
        value = (value << 1) | int(cell.mean() >= 128.0)
    return value


def nearest_color(rgb: tuple[float, float, float] | np.ndarray) -> str:
    """Name of the `COLORS` entry closest (Euclidean in RGB) to ``rgb``, e.g. a decoded mean."""
    v = np.asarray(rgb, dtype=np.float64).reshape(3)
    return min(COLORS, key=lambda name: float(np.sum((np.asarray(COLORS[name]) - v) ** 2)))
