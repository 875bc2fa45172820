"""Probe videos and sample frames from a time window with PyAV, seeking to keyframes.

How many frames, at which times and what size is ``paravt.video.budget`` (no decoding there).

Sampling rule (``sample_frames``): n frames over the window [start, end] (seconds relative to the
video's first frame) are aimed at the *centres* of n equal slots,

    t_i = start + (i + 0.5) · (end − start) / n,   i = 0 … n−1,

and each target returns the decoded frame whose presentation time is NEAREST to t_i (ties go to
the earlier frame). The returned ``Frames.timestamps`` are those frames' exact pts (relative to the
first frame), not the targets. When n exceeds the number of frames in the window, neighbouring
targets pick the same frame: duplicates are returned on purpose so that the count is always n
(the model's token budget is fixed by n).

Decoding: seek backward to the keyframe at or before the first target, decode forward only as far
as the last target. When the next target lies more than one GOP (keyframe interval, learned from
consecutive keyframes within one continuous decode; 10 s assumed until then) beyond the current
position, seek again instead of decoding through: the seek then lands after the current position
and decodes at most one GOP. Frames are ordered by ``frame.pts`` (never by counters), so
B-frames, variable frame rate, a non-zero start pts and interleaved audio streams are handled.
A target never filled at the end of the stream but far past the last frame means a truncated
file (`VideoError`); ``max_frames`` caps n in both the ``nframes`` and the ``fps`` mode.

Windows must lie inside [0, duration]; a window partly outside raises `VideoError` (the tool layer
clamps model-chosen windows before calling). The duration is the probe's (``paravt.video.probe``):
never shorter than the stream's last packet, so the frames of a VFR file whose header understates
it are reachable. Frames come out upright: the stream's display rotation is applied after the
resize (``max_pixels`` applies to the displayed size).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import av.container
import numpy as np

from paravt.errors import VideoError
from paravt.video import cache
from paravt.video.budget import (
    WINDOW_TOLERANCE_S,
    check_window,
    frame_count,
    smart_resize,
    target_times,
)
from paravt.video.probe import probe, quarter_turns
from paravt.video.timeline import timeline_frames, to_rgb
from paravt.video.types import Frames
from paravt.video.usable import too_short

#: Keyframe interval assumed until two are seen in one decode (x264's default 250 frames @ 25 fps).
DEFAULT_GOP_S = 10.0


@dataclass
class _Gop:
    """Keyframe intervals seen inside continuous decodes (never across a seek, where the gap
    between two keyframes says nothing about the GOP); estimates the keyframe interval for the
    seek-or-decode-through choice."""

    default: int
    intervals: list[int]
    last_key: int | None = None

    def seeked(self) -> None:
        self.last_key = None

    def saw_keyframe(self, pts: int) -> None:
        if self.last_key is not None and pts > self.last_key:
            self.intervals.append(pts - self.last_key)
        self.last_key = pts

    def interval(self) -> int:
        return max(self.intervals) if self.intervals else self.default


def _time_base(stream: av.video.stream.VideoStream) -> Fraction:
    """The stream's time base; a stream without one cannot be seeked or timed."""
    if stream.time_base is None:
        raise VideoError(f"{stream.container.name!r} has a video stream without a time base")
    return stream.time_base


def _pts(frame: av.VideoFrame) -> int:
    """A decoded frame's pts (`_frames_from` yields only frames that have one)."""
    if frame.pts is None:  # pragma: no cover - filtered out in _frames_from
        raise VideoError("a decoded frame has no presentation timestamp")
    return frame.pts


def _frames_from(
    container: av.container.InputContainer,
    stream: av.video.stream.VideoStream,
    offset: int,
    gop: _Gop,
) -> Iterator[av.VideoFrame]:
    container.seek(offset, backward=True, any_frame=False, stream=stream)
    cache.COUNTERS.add(seeks=1)
    gop.seeked()
    for packet in container.demux(stream):
        for frame in packet.decode():
            if frame.pts is None:
                continue
            cache.COUNTERS.add(decoded_frames=1)
            if frame.key_frame:
                gop.saw_keyframe(frame.pts)
            yield frame


def _seek_before(
    container: av.container.InputContainer,
    stream: av.video.stream.VideoStream,
    target: int,
    first_pts: int,
    gop: _Gop,
) -> Iterator[av.VideoFrame]:
    """Frames in pts order starting at or before ``target`` (re-seeking further back when the
    demuxer lands after the target, which some indexes do)."""
    backoff = max(1, round(1 / _time_base(stream)))  # 1 s, doubled on each retry
    offset = target
    while True:
        frames = _frames_from(container, stream, offset, gop)
        first = next(frames, None)
        at_start = offset <= first_pts
        if first is not None and (_pts(first) <= target or at_start):
            return itertools.chain([first], frames)
        if at_start:
            return iter(())
        offset = max(first_pts, target - backoff)
        backoff *= 2


def _decode_run(
    container: av.container.InputContainer,
    stream: av.video.stream.VideoStream,
    targets: Sequence[int],
    j: int,
    picked: list[av.VideoFrame | None],
    first_pts: int,
    gop: _Gop,
    reseek: bool,
) -> int:
    """Seek for ``targets[j]`` and decode forward, filling ``picked``; return the next pending
    index (stops early when seeking to the next target is cheaper than decoding through)."""
    prev: av.VideoFrame | None = None
    prev_pts = 0  # pts of prev, when there is one
    j0 = j  # re-seek only after this run filled a target: otherwise it could loop forever
    max_gap = round(0.1 / _time_base(stream))  # largest pts step seen (at least 0.1 s)
    for frame in _seek_before(container, stream, targets[j], first_pts, gop):
        pts = _pts(frame)
        if prev is not None:
            if pts <= prev_pts:
                continue  # leading frames of an open GOP: not in presentation order, skip
            max_gap = max(max_gap, pts - prev_pts)
        while j < len(targets) and pts >= targets[j]:
            near_prev = prev is not None and targets[j] - prev_pts <= pts - targets[j]
            picked[j] = prev if near_prev else frame
            j += 1
        if j == len(targets):
            return j
        prev, prev_pts = frame, pts
        if reseek and j > j0 and targets[j] - pts > gop.interval():
            return j
    _check_not_truncated(stream, prev, targets[-1], first_pts, 2 * max_gap)
    for k in range(j, len(targets)):
        picked[k] = prev
    return len(targets)


def _check_not_truncated(
    stream: av.video.stream.VideoStream,
    last: av.VideoFrame | None,
    target: int,
    first_pts: int,
    slack: int,
) -> None:
    """At end of stream, targets may lie within the last frame's display time; a target far past
    the last decodable frame means the file lost its tail."""
    tb = _time_base(stream)
    if last is None or target - _pts(last) > slack:
        ended = (
            "no frame"
            if last is None
            else f"the last frame at {float((_pts(last) - first_pts) * tb):.3f} s"
        )
        raise VideoError(
            f"decoding {stream.container.name!r} found {ended}, but "
            f"{float((target - first_pts) * tb):.3f} s was requested inside the duration the "
            "header promises; the file is truncated or corrupt, re-encode or re-download it"
        )


def _to_arrays(
    picked: Sequence[av.VideoFrame], size: tuple[int, int] | None, turns: int
) -> np.ndarray:
    """RGB arrays, resized to the DISPLAYED ``size`` (h, w) and turned upright by ``turns``
    counter-clockwise quarter turns (the stream's display matrix)."""
    out: dict[int, np.ndarray] = {}  # duplicates are converted once
    for frame in picked:
        if id(frame) not in out:
            out[id(frame)] = to_rgb(frame, size, turns)
    return np.stack([out[id(frame)] for frame in picked])


def _decode_times(
    key: cache.FileKey,
    times: Sequence[float],
    max_pixels: int | None,
    size_factor: int,
    reseek: bool,
) -> Frames:
    with cache.POOL.lend(key) as container:
        stream = container.streams.video[0]
        tb = _time_base(stream)
        first_pts = stream.start_time or 0
        targets = [first_pts + round(t / tb) for t in times]
        gop = _Gop(default=round(DEFAULT_GOP_S / tb), intervals=[])
        picked: list[av.VideoFrame | None] = [None] * len(targets)
        j = 0
        try:
            while j < len(targets):
                j = _decode_run(container, stream, targets, j, picked, first_pts, gop, reseek)
            frames = [f for f in picked if f is not None]
            assert len(frames) == len(targets)
            turns = quarter_turns(frames[0].rotation)
            h, w = (
                (frames[0].width, frames[0].height)
                if turns % 2
                else (frames[0].height, frames[0].width)
            )
            size = (
                None
                if max_pixels is None
                else smart_resize(h, w, max_pixels=max_pixels, factor=size_factor)
            )
            array = _to_arrays(frames, size, turns)
        except av.error.FFmpegError as err:
            raise VideoError(
                f"decoding {key.path!r} failed: {err}; the stream is corrupt or truncated, "
                "re-encode it"
            ) from None
        stamps = tuple(float((_pts(f) - first_pts) * tb) for f in frames)
    return Frames(array, stamps)


def frames_at(
    path: str | Path,
    times: Sequence[float],
    *,
    max_pixels: int | None = None,
    size_factor: int = 32,
    reseek: bool = True,
    whole: bool = False,
) -> Frames:
    """The decoded frames nearest to each time in ``times`` (seconds from the first frame,
    non-decreasing, inside [0, duration]); cached. ``reseek=False`` always decodes straight
    through from the first target (for benchmarks). ``whole``: serve a small video from one
    decode of the whole video and its converted frames (``paravt.video.timeline``: the same frames,
    for callers that read many windows of the same videos)."""
    key = cache.file_key(path)
    if not times:
        raise VideoError("no times given; pass at least one time in seconds")
    if any(b < a for a, b in zip(times, times[1:], strict=False)):
        raise VideoError(f"times {list(times)} are not sorted; pass them in non-decreasing order")
    if max_pixels is not None and (max_pixels <= 0 or size_factor <= 0):
        raise VideoError(
            f"max_pixels={max_pixels}, size_factor={size_factor}: both must be positive"
        )
    info = probe(path)
    if times[0] < -WINDOW_TOLERANCE_S or times[-1] > info.duration + WINDOW_TOLERANCE_S:
        raise VideoError(
            f"times [{times[0]}, …, {times[-1]}] s fall outside the video {info.path!r}, "
            "which spans "
            f"[0, {info.duration:.3f}] s; clamp them to the video first"
        )
    spec = ("at", tuple(times), max_pixels, size_factor, reseek)

    def size_of(h: int, w: int) -> tuple[int, int] | None:
        if max_pixels is None:
            return None
        return smart_resize(h, w, max_pixels=max_pixels, factor=size_factor)

    def compute() -> Frames:
        got = timeline_frames(key, info, times, size_of) if whole else None
        return (
            got if got is not None else _decode_times(key, times, max_pixels, size_factor, reseek)
        )

    return cache.RESULTS.get_or_compute((key, spec), compute)


def sample_frames(
    path: str | Path,
    start: float,
    end: float,
    *,
    nframes: int | None = None,
    fps: float | None = None,
    max_frames: int | None = None,
    max_pixels: int | None = None,
    size_factor: int = 32,
    whole: bool = False,
) -> Frames:
    """Sample frames uniformly over [start, end] seconds (see the module docstring for the rule).

    ``nframes`` wins over ``fps``; ``max_frames`` caps either. ``max_pixels`` resizes every frame to
    `smart_resize` (multiples of ``size_factor``: 28 for Qwen2.5-VL, 32 for Qwen3-VL); None keeps
    the native size. Cached per (file, spec); cached arrays are read-only. ``whole``: see
    `frames_at`.
    """
    info = probe(path)
    if (short := too_short(info)) is not None:
        raise VideoError(f"video {str(path)!r} {short}; use a longer video")
    check_window(info, start, end)
    n = frame_count(start, end, nframes=nframes, fps=fps, max_frames=max_frames)
    return frames_at(
        path,
        target_times(start, end, n),
        max_pixels=max_pixels,
        size_factor=size_factor,
        whole=whole,
    )


def sample_overview(
    path: str | Path,
    nframes: int,
    *,
    max_pixels: int | None = None,
    size_factor: int = 32,
    whole: bool = False,
) -> Frames:
    """``nframes`` frames sampled uniformly over the whole video (``whole``: see `frames_at`)."""
    info = probe(path)
    return sample_frames(
        path,
        0.0,
        info.duration,
        nframes=nframes,
        max_pixels=max_pixels,
        size_factor=size_factor,
        whole=whole,
    )
