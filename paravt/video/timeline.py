"""Frames of a small video served from ONE decode of the whole video (``frames_at(...,
whole=True)``).

The row builders (``paravt.data.chat``) and the episode's overview read many windows of the same
few hundred small videos: a clip, the overview at several n, the same overview again in another
row. The windowed decoder (``paravt.video.decode``) seeks and decodes each request apart, and
converts every frame it returns. Here one pass over the whole video learns its frame times (the
``Timeline``: every decodable frame's pts, in presentation order, filtered as the windowed decoder
filters them), and each frame is converted once per size (``cache.FRAMES``); a request whose
frames are all converted already decodes nothing.

The decoded frames of the last videos read stay too (``cache.DECODED``, bounded in bytes), so a
video is decoded once for all its requests while it is among them.

The rule is the windowed decoder's: each target takes the frame whose pts is nearest (ties to the
earlier one); a target past the last frame takes the last frame when it lies within twice the
larger of 0.1 s and the last frame step, else this path declines (None) and the caller decodes the
window as before (which then decides between the last frame and a truncation error). A video of
more than ``WHOLE_MAX_PIXELS`` pixels in all frames is declined too: decoding it whole would cost
more than its windows.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterator, Sequence

import av
import av.container
import numpy as np
from av.video.reformatter import VideoReformatter

from paravt.video import cache
from paravt.video.probe import quarter_turns, rotate_quarters
from paravt.video.types import Frames, VideoInfo

#: Decode a video whole only when all its frames hold at most this many pixels (64×64: 8,192
#: frames; 640×360: 145); the first pass holds its frames (≈ 1.5 bytes a pixel) until it ends.
WHOLE_MAX_PIXELS = 2**25
_LOCAL = threading.local()


def to_rgb(frame: av.VideoFrame, size: tuple[int, int] | None, turns: int) -> np.ndarray:
    """The frame as RGB, resized to the DISPLAYED ``size`` (h, w) and turned upright by ``turns``
    counter-clockwise quarter turns. One reformatter per thread, reused: ``VideoFrame.to_ndarray``
    builds a new scaler on every call (measured: 0.12–1.2 ms against 0.03 ms a 64×64 frame), and
    both give the same pixels."""
    reformatter = getattr(_LOCAL, "reformatter", None)
    if reformatter is None:
        reformatter = _LOCAL.reformatter = VideoReformatter()
    if size is None:
        out = reformatter.reformat(frame, format="rgb24")
    else:
        h, w = (size[1], size[0]) if turns % 2 else size  # resize in the stored orientation
        out = reformatter.reformat(frame, format="rgb24", width=w, height=h, interpolation="AREA")
    cache.COUNTERS.add(converted_frames=1)
    return rotate_quarters(out.to_ndarray(), turns)


def _pass(
    container: av.container.InputContainer, stream: av.video.stream.VideoStream
) -> Iterator[tuple[int, av.VideoFrame]]:
    """(pts, frame) of every frame from the stream's start in presentation order (pts None and
    frames not after the previous one skipped, as the windowed decoder skips them)."""
    container.seek(stream.start_time or 0, backward=True, any_frame=False, stream=stream)
    cache.COUNTERS.add(seeks=1, passes=1)
    last: int | None = None
    for packet in container.demux(stream):
        for frame in packet.decode():
            pts = frame.pts
            if pts is None:
                continue
            cache.COUNTERS.add(decoded_frames=1)
            if last is not None and pts <= last:
                continue
            last = pts
            yield pts, frame


def _decode_whole(key: cache.FileKey) -> tuple[cache.Timeline, dict[int, av.VideoFrame]] | None:
    """One pass over the whole video: its timeline and its frames (both cached)."""
    with cache.POOL.lend(key) as container:
        stream = container.streams.video[0]
        frames = dict(_pass(container, stream))
        if not frames or stream.time_base is None:
            return None
        first = next(iter(frames.values()))
        tl = cache.Timeline(
            tuple(frames),
            stream.start_time or 0,
            stream.time_base,
            first.width,
            first.height,
            quarter_turns(first.rotation),
        )
    cache.TIMELINES.put(key, tl)
    cache.DECODED.put(key, frames, sum(p.buffer_size for f in frames.values() for p in f.planes))
    return tl, frames


def _picks(tl: cache.Timeline, times: Sequence[float]) -> list[int] | None:
    """The pts nearest each time (ties to the earlier frame); None past the end of the video."""
    pts, tb = tl.pts, tl.time_base
    last_step = pts[-1] - pts[-2] if len(pts) > 1 else 0
    slack = 2 * max(round(0.1 / tb), last_step)
    out = []
    for t in times:
        target = tl.first_pts + round(t / tb)
        j = bisect.bisect_left(pts, target)
        if j == len(pts):
            if target - pts[-1] > slack:
                return None
            out.append(pts[-1])
        elif j > 0 and target - pts[j - 1] <= pts[j] - target:
            out.append(pts[j - 1])
        else:
            out.append(pts[j])
    return out


def _frames_of(key: cache.FileKey) -> dict[int, av.VideoFrame]:
    frames = cache.DECODED.get(key)
    if frames is None:
        whole = _decode_whole(key)
        assert whole is not None, key  # it had frames when its timeline was learnt
        frames = whole[1]
    return frames


def _arrays(
    key: cache.FileKey,
    picks: Sequence[int],
    size: tuple[int, int] | None,
    turns: int,
    decoded: dict[int, av.VideoFrame] | None,
) -> dict[int, np.ndarray]:
    """The picked frames as RGB: converted ones from ``cache.FRAMES``, the others converted from
    the video's decoded frames (``decoded``, else ``cache.DECODED``, else one more pass)."""
    out: dict[int, np.ndarray] = {}
    missing = []
    for p in dict.fromkeys(picks):
        hit = cache.FRAMES.get((key, p, size, turns))
        if hit is None:
            missing.append(p)
        else:
            out[p] = hit
            cache.COUNTERS.add(frame_hits=1)
    if missing:
        frames = decoded if decoded is not None else _frames_of(key)
        for p in missing:
            arr = out[p] = to_rgb(frames[p], size, turns)
            arr.flags.writeable = False  # shared by every request that picks this frame
            cache.FRAMES.put((key, p, size, turns), arr, arr.nbytes)
    return out


def timeline_frames(
    key: cache.FileKey,
    info: VideoInfo,
    times: Sequence[float],
    size_of: Callable[[int, int], tuple[int, int] | None],
) -> Frames | None:
    """The frames nearest ``times`` from the whole-video path, or None where it declines (module
    docstring). ``size_of(h, w)``: the resize of the displayed size (None keeps the native size)."""
    if info.num_frames * info.width * info.height > WHOLE_MAX_PIXELS:
        return None
    try:
        tl, decoded = cache.TIMELINES.get(key), None
        if tl is None:
            learnt = _decode_whole(key)
            if learnt is None:
                return None
            tl, decoded = learnt
        picks = _picks(tl, times)
        if picks is None:
            return None
        h, w = (tl.width, tl.height) if tl.turns % 2 else (tl.height, tl.width)
        size = size_of(h, w)
        arrays = _arrays(key, picks, size, tl.turns, decoded)
    except av.error.FFmpegError:  # a damaged file: the windowed decoder reports it
        return None
    stamps = tuple(float((p - tl.first_pts) * tl.time_base) for p in picks)
    return Frames(np.stack([arrays[p] for p in picks]), stamps)
