"""Write synthetic H.264 mp4 files with PyAV (libx264, yuv420p).

Used to build the synthetic datasets, the tests and the benchmark. Options exist to produce the
awkward files real decoders meet: B-frames (decode order ≠ presentation order), a non-zero start
pts, variable frame rate (explicit per-frame ``timestamps``), an extra audio stream and a display
rotation (the display matrix a phone writes: frames stored sideways, shown turned).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from paravt.errors import VideoError

#: Video stream time base: 1/90000 s (the MPEG convention) represents any fps and VFR closely.
TIME_BASE = Fraction(1, 90_000)
_AUDIO_RATE = 16_000


def _check_frame(i: int, frame: np.ndarray, shape: tuple[int, ...] | None) -> None:
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        raise VideoError(
            f"frame {i} has shape {frame.shape} and dtype {frame.dtype}; write_video needs uint8 "
            "H×W×3 RGB arrays"
        )
    h, w = frame.shape[:2]
    if h % 2 or w % 2:
        raise VideoError(
            f"frame {i} is {h}×{w}; yuv420p needs an even height and width (crop 1 px)"
        )
    if shape is not None and frame.shape != shape:
        raise VideoError(
            f"frame {i} has shape {frame.shape} but frame 0 had {shape}; all must match"
        )


def _frame_pts(i: int, fps: float, start_pts_s: float, timestamps: Sequence[float] | None) -> int:
    if timestamps is None:
        t = i / fps
    else:
        if i >= len(timestamps):
            raise VideoError(
                f"got more frames than the {len(timestamps)} timestamps given; pass one per frame"
            )
        t = float(timestamps[i])
    return round((start_pts_s + t) / TIME_BASE)


def _add_video_stream(
    container: av.container.OutputContainer,
    shape: tuple[int, ...],
    fps: float,
    gop: int,
    crf: int,
    bframes: bool,
) -> av.video.stream.VideoStream:
    stream = container.add_stream("libx264", rate=Fraction(fps).limit_denominator(1001))
    stream.height, stream.width = shape[0], shape[1]
    stream.pix_fmt = "yuv420p"
    stream.time_base = TIME_BASE
    stream.codec_context.time_base = TIME_BASE
    stream.codec_context.gop_size = gop
    # sc_threshold=0 turns off scene-cut keyframes so keyframes come exactly every `gop` frames
    # (synthetic videos change abruptly; the benchmark relies on a fixed keyframe interval).
    # mbtree=0: x264's macroblock-tree rate control made different files of the same frames from
    # one process to the next (2 to 10 of 32 encodes), so a rebuilt ParaVT-Synth (a repro killed
    # inside that stage, a second run) held other videos and every number after it moved.
    stream.options = {
        "crf": str(crf),
        "bf": "3" if bframes else "0",
        "sc_threshold": "0",
        "x264-params": "mbtree=0",
    }
    return stream


def _write_silent_audio(
    container: av.container.OutputContainer, stream: av.audio.stream.AudioStream, seconds: float
) -> None:
    samples_left = max(1, round(seconds * _AUDIO_RATE))
    frame_size = stream.codec_context.frame_size or 1024
    pts = 0
    while samples_left > 0:
        n = min(frame_size, samples_left)
        frame = av.AudioFrame.from_ndarray(
            np.zeros((1, n), dtype=np.float32), format="fltp", layout="mono"
        )
        frame.sample_rate = _AUDIO_RATE
        frame.pts = pts
        pts += n
        samples_left -= n
        for packet in stream.encode(frame):
            container.mux(packet)
    for packet in stream.encode(None):
        container.mux(packet)


@dataclass(frozen=True)
class Encoding:
    """The encoder's settings: ``gop`` the keyframe interval in frames, ``crf`` the x264 quality
    (lower = better), ``bframes`` up to 3 B-frames, ``audio`` a silent mono AAC track as long as
    the video."""

    gop: int = 250
    crf: int = 23
    bframes: bool = True
    audio: bool = False


def write_video(
    path: str | Path,
    frames: Iterable[np.ndarray],
    fps: float,
    *,
    encoding: Encoding = Encoding(),
    start_pts_s: float = 0.0,
    timestamps: Sequence[float] | None = None,
    rotation: int = 0,
) -> Path:
    """Encode ``frames`` (uint8 H×W×3 RGB, H and W even) as an H.264 mp4 at ``path``.

    Frame i is shown at ``start_pts_s + i / fps`` seconds, or at ``start_pts_s + timestamps[i]``
    when ``timestamps`` is given (variable frame rate; ``fps`` is then only the nominal rate in the
    header). ``encoding``: keyframe interval, quality, B-frames, a silent audio track.
    ``rotation`` (degrees counter-clockwise, a multiple of 90) is stored as the display matrix:
    players (and ``paravt.video`` decoding) show each frame turned by it. Returns the path.
    Raises `VideoError` for bad frames or arguments.
    """
    gop, crf, bframes, audio = encoding.gop, encoding.crf, encoding.bframes, encoding.audio
    if rotation % 90:
        raise VideoError(f"rotation={rotation} is not a multiple of 90 degrees")
    if fps <= 0 or gop <= 0 or start_pts_s < 0:
        raise VideoError(
            f"fps={fps}, gop={gop}, start_pts_s={start_pts_s}: need fps > 0, gop ≥ 1, start ≥ 0"
        )
    out = Path(path)
    shape: tuple[int, ...] | None = None
    last_pts = 0
    with av.open(str(out), mode="w", format="mp4") as container:
        stream = None
        astream = _add_audio(container) if audio else None
        for i, arr in enumerate(frames):
            arr = np.asarray(arr)
            _check_frame(i, arr, shape)
            if stream is None:
                shape = arr.shape
                stream = _add_video_stream(container, shape, fps, gop, crf, bframes)
                if rotation % 360:
                    stream.set_display_rotation(rotation)
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(arr), format="rgb24")
            pts = _frame_pts(i, fps, start_pts_s, timestamps)
            if i > 0 and pts <= last_pts:
                raise VideoError(
                    f"frame {i} time {float(pts * TIME_BASE)}s is not after frame {i - 1}; "
                    "times must increase"
                )
            frame.pts, frame.time_base, last_pts = pts, TIME_BASE, pts
            for packet in stream.encode(frame):
                container.mux(packet)
        if stream is None:
            raise VideoError(f"no frames given for {out}; write_video needs at least one frame")
        for packet in stream.encode(None):
            container.mux(packet)
        if astream is not None:
            _write_silent_audio(container, astream, float(last_pts * TIME_BASE) + 1.0 / fps)
    return out


def _add_audio(container: av.container.OutputContainer) -> av.audio.stream.AudioStream:
    astream = container.add_stream("aac", rate=_AUDIO_RATE)
    astream.layout = "mono"
    return astream
