"""Probe a video's first stream: duration, fps, frame count, DISPLAY size, codec, start, rotation.

What the header says is not trusted where it can be wrong:

- **Rotation.** Phones store frames sideways plus a display matrix (rotation side data). PyAV
  exposes it on decoded frames as ``VideoFrame.rotation`` (degrees counter-clockwise, as FFmpeg's
  ``av_display_rotation_get``); the probe decodes the first frame to read it. Decoding applies it
  (`rotate_quarters`), so frames come out upright and ``VideoInfo.width``/``height`` are the
  displayed size. Rotations are rounded to quarter turns; flips in the matrix are not applied.
- **Duration.** The header's stream duration (or the container's) can understate the stream: an
  mp4 whose sample table sums nominal frame durations while the presentation times of a variable
  frame-rate stream run further. The probe demuxes (without decoding) from the last keyframe
  before the header's end to the end of the file and takes the end of the last packet
  (pts + duration) when it is later, so every frame of the stream is reachable.

Results are cached per file identity (``cache.INFOS``); probing never counts as decoding in
``decode_stats``.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import av
import av.container
import numpy as np

from paravt.errors import VideoError
from paravt.video import cache
from paravt.video.types import VideoInfo


def quarter_turns(degrees: float) -> int:
    """Counter-clockwise quarter turns (0–3) nearest to a display rotation in degrees."""
    return int(round(degrees / 90.0)) % 4


def rotate_quarters(image: np.ndarray, k: int) -> np.ndarray:
    """An H×W×C image turned ``k`` quarter turns counter-clockwise (as displayed)."""
    return np.ascontiguousarray(np.rot90(image, k)) if k % 4 else image


def _first_rotation(
    container: av.container.InputContainer, stream: av.video.stream.VideoStream
) -> int:
    container.seek(stream.start_time or 0, backward=True, any_frame=False, stream=stream)
    for packet in container.demux(stream):
        for frame in packet.decode():
            return quarter_turns(frame.rotation)
    return 0


def _stream_end(
    container: av.container.InputContainer, stream: av.video.stream.VideoStream, header_end: int
) -> int | None:
    """The latest ``pts + duration`` among the packets from the keyframe before ``header_end``
    to the end of the file (None when there is no timed packet)."""
    container.seek(header_end, backward=True, any_frame=False, stream=stream)
    end = None
    for packet in container.demux(stream):
        if packet.pts is not None:
            stop = packet.pts + (packet.duration or 0)
            end = stop if end is None else max(end, stop)
    return end


def _header_duration(
    container: av.container.InputContainer, stream: av.video.stream.VideoStream, start: float
) -> float:
    tb = stream.time_base or Fraction(1, 1)
    if stream.duration:
        return float(stream.duration * tb)
    if container.duration:
        return container.duration / av.time_base - start
    return 0.0


def stream_info(path: str, container: av.container.InputContainer) -> VideoInfo:
    s = container.streams.video[0]
    tb = s.time_base or Fraction(1, 1)
    first = s.start_time or 0
    start = float(first * tb)
    header = _header_duration(container, s, start)
    try:
        end = _stream_end(container, s, first + max(0, round(header / tb)))
        k = _first_rotation(container, s)
    except av.error.FFmpegError as err:
        raise VideoError(
            f"{path!r}: reading the stream failed: {err}; the file is corrupt, re-encode it"
        ) from None
    duration = max(header, float((end - first) * tb)) if end is not None else header
    if not duration > 0:
        raise VideoError(
            f"{path!r}: the video stream has no duration; the file is empty or broken, re-encode it"
        )
    rate = s.average_rate or s.guessed_rate
    fps = float(rate) if rate else (s.frames / duration if s.frames else 0.0)
    if not fps > 0:
        raise VideoError(f"{path!r}: cannot determine the frame rate; re-encode the file")
    num_frames = s.frames if s.frames else round(duration * fps)
    cc = s.codec_context
    width, height = (cc.height, cc.width) if k % 2 else (cc.width, cc.height)
    return VideoInfo(path, duration, fps, int(num_frames), width, height, cc.name, start, 90 * k)


def probe(path: str | Path) -> VideoInfo:
    """Read duration, fps, frame count, displayed size, codec, start time and rotation of the
    first video stream (see the module docstring); cached per file identity."""
    key = cache.file_key(path)
    info = cache.INFOS.get(key)
    if info is None:
        with cache.POOL.lend(key) as container:
            info = stream_info(str(path), container)
        cache.INFOS.put(key, info)
    return info if info.path == str(path) else replace(info, path=str(path))
