"""The arithmetic of sampling, without decoding: how many frames a window or an overview gets
(`frame_count`, `overview_count`: the ONE rounding rule), at which times (`target_times`: slot
centres), at what size (`smart_resize`: Qwen-VL's rule), and which windows are valid
(`check_window`). ``paravt.video.decode`` samples with them."""

from __future__ import annotations

import math

from paravt.errors import VideoError
from paravt.video.types import VideoInfo

#: Slack when checking a window against the duration (container durations are rounded).
WINDOW_TOLERANCE_S = 1e-3


def smart_resize(h: int, w: int, *, max_pixels: int, factor: int) -> tuple[int, int]:
    """Qwen-VL's resize rule: round h and w to multiples of ``factor``; if that exceeds
    ``max_pixels``, scale both down by the same ratio and floor to multiples of ``factor``.
    Never below one factor per side (so the result exceeds a ``max_pixels`` < factor²).

    Example: 360×640, factor 32, max 224·224 = 50176 → rounding gives 352×640 = 225280 > max,
    ratio √(230400/50176) = 2.143, 168/32 → 5·32 = 160, 298.7/32 → 9·32 = 288: (160, 288).
    """
    if h <= 0 or w <= 0 or factor <= 0 or max_pixels <= 0:
        raise VideoError(
            f"smart_resize(h={h}, w={w}, max_pixels={max_pixels}, factor={factor}): "
            "all must be positive"
        )
    hb = max(factor, round(h / factor) * factor)
    wb = max(factor, round(w / factor) * factor)
    if hb * wb > max_pixels:
        beta = math.sqrt(h * w / max_pixels)
        hb = max(factor, math.floor(h / beta / factor) * factor)
        wb = max(factor, math.floor(w / beta / factor) * factor)
    return hb, wb


def target_times(start: float, end: float, n: int) -> tuple[float, ...]:
    """Centres of n equal slots of [start, end]: start + (i + 0.5)(end − start)/n."""
    step = (end - start) / n
    return tuple(start + (i + 0.5) * step for i in range(n))


def frame_count(
    start: float, end: float, *, nframes: int | None, fps: float | None, max_frames: int | None
) -> int:
    """How many frames to sample: ``nframes`` if given, else max(1, round((end − start)·fps));
    either is then capped by ``max_frames``.

    The ONE rounding rule of a frame count taken from a rate (crop windows, frame_select, the
    benchmark overview through `overview_count`): Python's ``round``, the nearest integer, an exact
    half going to the even neighbour (2.5 s at 1 fps → 2, 3.5 s → 4), and never fewer than one."""
    if nframes is not None:
        if nframes <= 0:
            raise VideoError(f"nframes={nframes} must be ≥ 1; ask for at least one frame")
        n = nframes
    elif fps is not None:
        if not fps > 0:
            raise VideoError(f"fps={fps} must be > 0; pass a positive sampling rate or nframes")
        n = max(1, round((end - start) * fps))
    else:
        raise VideoError("neither nframes nor fps given; pass nframes=N or fps=F")
    if max_frames is not None:
        if max_frames <= 0:
            raise VideoError(f"max_frames={max_frames} must be ≥ 1 (or None for no cap)")
        n = min(n, max_frames)
    return n


def check_window(info: VideoInfo, start: float, end: float) -> None:
    """`VideoError` unless 0 ≤ start < end ≤ duration (within `WINDOW_TOLERANCE_S`)."""
    if not (math.isfinite(start) and math.isfinite(end)):
        raise VideoError(f"window [{start}, {end}] is not finite; pass numbers of seconds")
    if start >= end:
        raise VideoError(f"window [{start}, {end}] has start ≥ end; pass start < end (seconds)")
    if start < -WINDOW_TOLERANCE_S or end > info.duration + WINDOW_TOLERANCE_S:
        raise VideoError(
            f"window [{start}, {end}] s is outside the video {info.path!r}, which spans "
            f"[0, {info.duration:.3f}] s; clamp the window to the video first"
        )


def overview_count(budget: int, duration: float, fps: float | None = None) -> int:
    """How many overview frames a video of ``duration`` seconds gets at ``budget``
    (``video.overview_nframes``, or a gated budget): the budget itself without ``fps``; with it,
    the frames at ``fps`` when fewer (`frame_count`'s rounding, at least one). A budget of 0 is
    the on-demand context (metadata only) and stays 0."""
    if budget < 0:
        raise VideoError(f"overview budget {budget} must be ≥ 0 (0 = metadata only)")
    if budget == 0 or fps is None:
        return budget
    return frame_count(0.0, max(0.0, float(duration)), nframes=None, fps=fps, max_frames=budget)
