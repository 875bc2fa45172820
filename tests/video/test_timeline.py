"""The whole-video path (``frames_at(..., whole=True)``, ``paravt.video.timeline``): the same frames
as the windowed decoder, one decode per video for many windows, bounded memory, and a decline
(windowed decode) for videos too large to decode whole."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from paravt.video import (
    cache,
    clear_cache,
    decode_stats,
    draw,
    frames_at,
    probe,
    sample_frames,
    timeline as tl_mod,
    write_video,
)
from paravt.video.budget import target_times
from paravt.video.writer import Encoding


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_cache()
    yield
    clear_cache()


def _both(path: Path, times: list[float], **kw: object) -> tuple[object, object]:
    """(windowed, whole) results of the same request, each from an empty cache."""
    clear_cache()
    windowed = frames_at(path, times, **kw)  # type: ignore[arg-type]
    clear_cache()
    whole = frames_at(path, times, whole=True, **kw)  # type: ignore[arg-type]
    assert decode_stats().passes == 1  # served by the whole-video path, not a fallback
    return windowed, whole


def _requests(duration: float, rng: np.random.Generator) -> list[list[float]]:
    out = [list(target_times(0.0, duration, n)) for n in (1, 4, 7, 16, 64)]  # overviews
    for _ in range(8):  # windows, more targets than frames included
        a, b = sorted(rng.uniform(0.0, duration, 2))
        out.append(list(target_times(a, max(b, a + 0.01), int(rng.integers(1, 20)))))
    return out


@pytest.mark.parametrize("name", ["bframes_video", "vfr_video", "offset_audio_video", "long_video"])
def test_whole_path_returns_the_windowed_decoders_frames(
    name: str, request: pytest.FixtureRequest
) -> None:
    path, _ = request.getfixturevalue(name)
    duration = probe(path).duration
    for times in _requests(duration, np.random.default_rng(3)):
        for kw in ({}, {"max_pixels": 1200, "size_factor": 16}):
            windowed, whole = _both(path, times, **kw)
            np.testing.assert_array_equal(whole.array, windowed.array)  # type: ignore[attr-defined]
            assert whole.timestamps == windowed.timestamps  # type: ignore[attr-defined]


@pytest.mark.parametrize("degrees", [90, 270])
def test_whole_path_turns_frames_upright_like_the_windowed_one(
    degrees: int, tmp_path: Path
) -> None:
    frames = [draw.solid(32, 64, (250, 20, 20)) for _ in range(6)]
    for img in frames:
        img[:16, :32] = (20, 250, 20)
    path = write_video(
        tmp_path / "rot.mp4", frames, fps=2.0, rotation=degrees, encoding=Encoding(crf=10)
    )
    windowed, whole = _both(path, [0.5, 1.5, 2.5], max_pixels=16 * 32, size_factor=8)
    assert whole.array.shape[1] > whole.array.shape[2]  # type: ignore[attr-defined]  # portrait
    np.testing.assert_array_equal(whole.array, windowed.array)  # type: ignore[attr-defined]


def test_clips_and_overviews_of_a_video_share_one_decode(long_video) -> None:
    path, times = long_video
    overview = sample_frames(path, 0.0, 24.0, nframes=16, whole=True)
    after_first = decode_stats()
    assert (after_first.passes, after_first.containers_opened) == (1, 1)
    assert after_first.decoded_frames == 600  # the whole video, once
    clip = sample_frames(path, 4.0, 10.0, nframes=8, whole=True)  # new frames, the same decode
    for n in (4, 8, 16, 48):  # overviews at other n (48 picks the frames of 16 among others)
        sample_frames(path, 0.0, 24.0, nframes=n, whole=True)
    stats = decode_stats()
    assert stats.containers_opened == 1
    assert stats.passes == 1  # the decoded frames stayed: later requests only convert
    assert stats.frame_hits > 0
    repeat_clip = frames_at(
        path, list(clip.timestamps[::2]), whole=True
    )  # every frame converted already
    assert decode_stats().passes == stats.passes
    assert decode_stats().converted_frames == stats.converted_frames
    assert [draw.read_barcode(a) for a in repeat_clip.array] == [
        draw.read_barcode(a) for a in clip.array[::2]
    ]
    assert [draw.read_barcode(a) for a in overview.array] == [
        min(range(600), key=lambda i: (abs(times[i] - t), i)) for t in target_times(0.0, 24.0, 16)
    ]


def test_frame_cache_stays_within_its_byte_budget(
    long_video, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = long_video
    frame_bytes = 48 * 64 * 3
    monkeypatch.setattr(cache, "FRAMES", cache.ByteCache(10 * frame_bytes))
    got = sample_frames(path, 0.0, 24.0, nframes=30, whole=True)
    assert cache.FRAMES.nbytes <= 10 * frame_bytes
    clear_cache()
    np.testing.assert_array_equal(got.array, sample_frames(path, 0.0, 24.0, nframes=30).array)


def test_video_too_large_to_decode_whole_is_read_by_windows(
    long_video, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = long_video
    monkeypatch.setattr(tl_mod, "WHOLE_MAX_PIXELS", 600 * 48 * 64 - 1)
    sample_frames(path, 20.0, 21.0, nframes=4, whole=True)
    stats = decode_stats()
    assert stats.passes == 0 and stats.decoded_frames <= 60  # one window's seek, as before


def test_target_far_past_the_last_frame_falls_back(tmp_path: Path) -> None:
    times = [0.0, 0.5, 1.0, 1.5, 2.0, 9.0, 9.5]  # header duration 3.5 s, last frame at 9.5 s
    path = write_video(
        tmp_path / "vfr.mp4",
        [draw.solid(32, 32, (20 * i, 90, 90)) for i in range(7)],
        fps=2.0,
        timestamps=times,
    )
    windowed, whole = _both(path, [9.0, 9.5])
    np.testing.assert_array_equal(whole.array, windowed.array)  # type: ignore[attr-defined]
    timeline = cache.TIMELINES.get(cache.file_key(path))
    assert timeline is not None and len(timeline.pts) == 7
