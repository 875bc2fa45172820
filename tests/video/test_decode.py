"""Frame-exact window sampling on barcoded videos (frame i shows i), resizing, sampling rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from video_helpers import nearest_index

from paravt.video import (
    decode_stats,
    draw,
    frame_count,
    frames_at,
    probe,
    sample_frames,
    sample_overview,
    smart_resize,
    target_times,
)


def _assert_frame_exact(path: Path, times: list[float], start: float, end: float, n: int) -> None:
    frames = sample_frames(path, start, end, nframes=n)
    assert len(frames) == n
    for target, image, stamp in zip(
        target_times(start, end, n), frames.array, frames.timestamps, strict=True
    ):
        want = nearest_index(times, target)
        assert draw.read_barcode(image) == want, (target, stamp)
        assert stamp == pytest.approx(times[want], abs=1e-6)


def test_bframes_video_returns_the_frame_nearest_each_target(bframes_video) -> None:
    path, times = bframes_video
    _assert_frame_exact(path, times, 0.0, 4.0, 16)
    _assert_frame_exact(path, times, 1.37, 2.93, 7)  # not keyframe-aligned (gop 1 s), no exact ties


def test_variable_frame_rate_uses_real_pts(vfr_video) -> None:
    path, times = vfr_video
    info = probe(path)
    _assert_frame_exact(path, times, 0.0, info.duration, 12)
    _assert_frame_exact(path, times, times[20], times[40], 9)


def test_nonzero_start_pts_and_audio_stream(offset_audio_video) -> None:
    path, times = offset_audio_video
    info = probe(path)
    assert info.start_time == pytest.approx(1.5)
    assert info.duration == pytest.approx(2.0)  # 50 frames at 25 fps, start offset removed
    assert (info.num_frames, info.width, info.height, info.codec) == (50, 64, 48, "h264")
    _assert_frame_exact(path, times, 0.0, 2.0, 7)
    assert sample_frames(path, 0.0, 0.04, nframes=1).timestamps == (0.0,)  # relative to first frame


def test_probe_reads_duration_fps_and_frame_count(bframes_video) -> None:
    info = probe(bframes_video[0])
    assert (info.duration, info.fps, info.num_frames, info.start_time) == (4.0, 25.0, 100, 0.0)


def test_targets_are_slot_centres() -> None:
    # [10, 14] in 4 slots of 1 s: centres 10.5, 11.5, 12.5, 13.5
    assert target_times(10.0, 14.0, 4) == (10.5, 11.5, 12.5, 13.5)


def test_nframes_wins_over_fps_and_max_frames_caps() -> None:
    assert frame_count(0.0, 10.0, nframes=4, fps=2.0, max_frames=None) == 4
    assert frame_count(0.0, 10.0, nframes=None, fps=2.0, max_frames=None) == 20  # round(10 · 2)
    assert frame_count(0.0, 10.0, nframes=None, fps=2.0, max_frames=16) == 16
    assert frame_count(0.0, 0.2, nframes=None, fps=1.0, max_frames=None) == 1  # never 0
    assert frame_count(0.0, 10.0, nframes=32, fps=None, max_frames=16) == 16


def test_fps_sampling_gives_round_window_times_fps(bframes_video) -> None:
    path, _ = bframes_video
    assert len(sample_frames(path, 1.0, 3.0, fps=2.0)) == 4
    assert len(sample_frames(path, 1.0, 3.0, nframes=3, fps=2.0)) == 3


def test_more_targets_than_frames_repeat_the_nearest_frames(bframes_video) -> None:
    path, times = bframes_video
    # window [1.0, 1.08]: frames 25, 26, 27 at 1.00, 1.04, 1.08; 8 targets 1.005, 1.015, …, 1.075
    frames = sample_frames(path, 1.0, 1.08, nframes=8)
    got = [draw.read_barcode(a) for a in frames.array]
    # 1.005 1.015 → 1.00 | 1.025 … 1.055 → 1.04 (0.015 away vs 0.025) | 1.065 1.075 → 1.08
    assert got == [25, 25, 26, 26, 26, 26, 27, 27]
    assert frames.timestamps == pytest.approx((1.0, 1.0, 1.04, 1.04, 1.04, 1.04, 1.08, 1.08))


def test_smart_resize_hand_worked() -> None:
    # 360×640, factor 32, 50176 px: 352×640 too big; ratio 2.143 → 168 → 160, 298.7 → 288
    assert smart_resize(360, 640, max_pixels=224 * 224, factor=32) == (160, 288)
    # small enough already: round to multiples of 28 (48 → 56, 64 → 56)
    assert smart_resize(48, 64, max_pixels=100_000, factor=28) == (56, 56)
    # never below one factor per side
    assert smart_resize(48, 64, max_pixels=10, factor=32) == (32, 32)


def test_max_pixels_resizes_to_factor_multiples_keeping_aspect(long_video) -> None:
    path, _ = long_video
    frames = sample_frames(path, 2.0, 4.0, nframes=3, max_pixels=1200, size_factor=16)
    # 48×64 → 48×64 = 3072 > 1200; ratio 1.6: 30 → 16, 40 → 32
    assert frames.array.shape == (3, 16, 32, 3)
    native = sample_frames(path, 2.0, 4.0, nframes=3)
    assert native.array.shape == (3, 48, 64, 3)
    # the resized frame is the native frame scaled: mean colours agree
    assert np.abs(frames.array.mean(axis=(1, 2)) - native.array.mean(axis=(1, 2))).max() < 12


def test_window_decode_seeks_instead_of_decoding_from_the_start(long_video) -> None:
    path, times = long_video
    before = decode_stats().decoded_frames
    _assert_frame_exact(path, times, 20.0, 21.0, 4)
    decoded = decode_stats().decoded_frames - before
    assert decoded <= 60  # keyframe at 20 s: about 25 frames, not the 525 before the window


def test_widely_spaced_targets_reseek_and_match_decoding_through(long_video) -> None:
    path, _ = long_video
    # keyframes every 1 s. After target 13.49 the next, 23.51, is 10 s away: the GOP must be
    # learned from keyframes 13 → 14 of one run (1 s → seek), not from 2 → 13 across a seek.
    targets = [2.51, 13.49, 23.51]
    before = decode_stats().decoded_frames
    seeking = frames_at(path, targets)
    mid = decode_stats().decoded_frames
    through = frames_at(path, targets, reseek=False)
    after = decode_stats().decoded_frames
    assert [draw.read_barcode(a) for a in seeking.array] == [63, 337, 588]
    np.testing.assert_array_equal(seeking.array, through.array)
    assert mid - before <= 100  # ≈ 13 + 25 + 13 frames; decoding through is ≈ 540
    assert after - mid >= 500


def test_overview_spans_the_whole_video(bframes_video) -> None:
    path, _ = bframes_video
    frames = sample_overview(path, 5)
    # 4 s in 5 slots: centres 0.4, 1.2, 2.0, 2.8, 3.6 s = frames 10, 30, 50, 70, 90
    assert [draw.read_barcode(a) for a in frames.array] == [10, 30, 50, 70, 90]
    assert frames.timestamps == pytest.approx((0.4, 1.2, 2.0, 2.8, 3.6))
