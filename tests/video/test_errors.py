"""Every bad input becomes a VideoError that names the value, the rule and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from paravt.errors import VideoError
from paravt.video import probe, sample_frames


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(VideoError, match=r"nope\.mp4.*does not exist"):
        sample_frames(tmp_path / "nope.mp4", 0, 1, nframes=2)


def test_text_file_named_mp4(tmp_path: Path) -> None:
    bad = tmp_path / "notes.mp4"
    bad.write_text("this is not a video\n" * 50)
    with pytest.raises(VideoError, match="cannot be opened as a video.*re-encode or re-download"):
        probe(bad)


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.mp4"
    empty.touch()
    with pytest.raises(VideoError, match=r"empty \(0 bytes\)"):
        probe(empty)


def test_directory_is_not_a_video(tmp_path: Path) -> None:
    with pytest.raises(VideoError, match="is a directory, not a regular file"):
        probe(tmp_path)


def test_truncated_file(tmp_path: Path, bframes_video) -> None:
    data = bframes_video[0].read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(VideoError, match="truncated"):
        sample_frames(cut, 0, 1, nframes=2)


def test_truncated_faststart_file_with_index_but_missing_tail(
    tmp_path: Path, bframes_video
) -> None:
    import av

    src = bframes_video[0]
    fast = tmp_path / "fast.mp4"
    with (
        av.open(str(src)) as inp,
        av.open(str(fast), "w", options={"movflags": "faststart"}) as out,
    ):
        stream = out.add_stream_from_template(inp.streams.video[0])
        for packet in inp.demux(video=0):
            if packet.dts is not None:
                packet.stream = stream
                out.mux(packet)
    data = fast.read_bytes()
    cut = tmp_path / "fast_cut.mp4"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(VideoError, match="truncated"):
        sample_frames(cut, 3.0, 4.0, nframes=2)


@pytest.mark.parametrize(
    ("start", "end", "kwargs", "match"),
    [
        (2.0, 2.0, {"nframes": 2}, r"\[2.0, 2.0\] has start ≥ end"),
        (3.0, 1.0, {"nframes": 2}, "start ≥ end"),
        (-1.0, 1.0, {"nframes": 2}, r"outside the video .* \[0, 4.000\] s; clamp"),
        (3.0, 9.0, {"nframes": 2}, r"outside the video .* \[0, 4.000\] s; clamp"),
        (0.0, 1.0, {"nframes": 0}, "nframes=0 must be ≥ 1"),
        (0.0, 1.0, {"nframes": -3}, "nframes=-3 must be ≥ 1"),
        (0.0, 1.0, {"fps": 0.0}, "fps=0.0 must be > 0"),
        (0.0, 1.0, {}, "neither nframes nor fps"),
        (0.0, 1.0, {"nframes": 2, "max_pixels": 0}, "must be positive"),
    ],
)
def test_bad_window_or_count(
    bframes_video, start: float, end: float, kwargs: dict, match: str
) -> None:
    with pytest.raises(VideoError, match=match):
        sample_frames(bframes_video[0], start, end, **kwargs)
