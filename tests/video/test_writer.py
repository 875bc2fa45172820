"""The synthetic writer produces the awkward files decoders meet: B-frames, fixed GOP, VFR,
start offset, audio."""

from __future__ import annotations

import hashlib
from pathlib import Path

import av
import numpy as np
import pytest
from video_helpers import barcoded

from paravt.errors import VideoError
from paravt.video import Encoding, write_video


def _packets(path: Path) -> list[tuple[int, int, bool]]:
    with av.open(str(path)) as c:
        return [(p.pts, p.dts, p.is_keyframe) for p in c.demux(video=0) if p.pts is not None]


def test_bframes_reorder_packets_and_can_be_turned_off(tmp_path: Path) -> None:
    with_b = _packets(write_video(tmp_path / "b.mp4", barcoded(30), 25, encoding=Encoding(gop=10)))
    without = _packets(
        write_video(tmp_path / "p.mp4", barcoded(30), 25, encoding=Encoding(gop=10, bframes=False))
    )
    assert any(pts != dts for pts, dts, _ in with_b)  # decode order ≠ presentation order
    assert [pts for pts, _, _ in without] == sorted(pts for pts, _, _ in without)


def test_keyframes_come_exactly_every_gop_frames(tmp_path: Path) -> None:
    packets = _packets(
        write_video(tmp_path / "g.mp4", barcoded(40), 25, encoding=Encoding(gop=10, bframes=False))
    )
    assert [i for i, (_, _, key) in enumerate(packets) if key] == [0, 10, 20, 30]


def test_start_offset_vfr_and_audio_are_written(tmp_path: Path) -> None:
    times = [0.0, 0.1, 0.15, 0.6, 0.62]
    path = write_video(
        tmp_path / "v.mp4",
        barcoded(5),
        25,
        timestamps=times,
        start_pts_s=2.0,
        encoding=Encoding(audio=True),
    )
    with av.open(str(path)) as c:
        assert sorted(s.type for s in c.streams) == ["audio", "video"]
        got = [round(float(f.time), 4) for f in c.decode(video=0)]
    assert got == [2.0, 2.1, 2.15, 2.6, 2.62]


@pytest.mark.parametrize(
    ("frames", "match"),
    [
        ([np.zeros((47, 64, 3), np.uint8)], "even height and width"),
        ([np.zeros((48, 64, 3), np.float32)], "uint8"),
        ([np.zeros((48, 64, 3), np.uint8), np.zeros((48, 32, 3), np.uint8)], "all must match"),
        ([], "no frames"),
    ],
)
def test_bad_frames_raise_video_error(tmp_path: Path, frames: list[np.ndarray], match: str) -> None:
    with pytest.raises(VideoError, match=match):
        write_video(tmp_path / "bad.mp4", frames, 25)


def test_non_increasing_timestamps_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(VideoError, match="must increase"):
        write_video(tmp_path / "t.mp4", barcoded(3), 25, timestamps=[0.0, 0.5, 0.5])


def _encode_noise(path: str) -> str:
    rng = np.random.default_rng(0)
    frames = [
        np.clip(rng.normal(128, 40, (48, 64, 3)), 0, 255).astype(np.uint8) for _ in range(140)
    ]
    data = write_video(path, frames, 4.0, encoding=Encoding(gop=8)).read_bytes()
    return hashlib.sha256(data).hexdigest()


def test_the_same_frames_encode_to_the_same_bytes_in_every_process(tmp_path: Path) -> None:
    """Issue 48 item 8: a rebuilt ParaVT-Synth (a repro killed inside its synth stage, or a second
    run) must hold the very videos of the first build. With x264's macroblock-tree rate control,
    32 encodes of these frames, 4 processes at a time, made 2 to 4 different files."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(4) as pool:
        digests = set(pool.map(_encode_noise, [str(tmp_path / f"{i}.mp4") for i in range(32)]))
    assert len(digests) == 1
