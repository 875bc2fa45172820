"""The result cache serves repeats without decoding; rewritten files are not served stale."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from video_helpers import barcoded

from paravt.video import Encoding, clear_cache, decode_stats, draw, sample_frames, write_video


@pytest.fixture
def fresh_cache():
    clear_cache()
    yield
    clear_cache()


def test_cache_hit_does_not_decode_again(fresh_cache, bframes_video) -> None:
    path, _ = bframes_video
    first = sample_frames(path, 1.0, 3.0, nframes=4)
    after_first = decode_stats()
    assert (after_first.hits, after_first.misses) == (0, 1)
    assert after_first.decoded_frames > 0
    second = sample_frames(path, 1.0, 3.0, nframes=4)
    after_second = decode_stats()
    assert (after_second.hits, after_second.misses) == (1, 1)
    assert after_second.decoded_frames == after_first.decoded_frames
    assert after_second.seeks == after_first.seeks
    np.testing.assert_array_equal(first.array, second.array)


def test_different_spec_is_a_miss(fresh_cache, bframes_video) -> None:
    path, _ = bframes_video
    sample_frames(path, 1.0, 3.0, nframes=4)
    sample_frames(path, 1.0, 3.0, nframes=5)
    sample_frames(path, 1.0, 3.0, nframes=4, max_pixels=1024)
    assert (decode_stats().hits, decode_stats().misses) == (0, 3)


def test_cached_arrays_are_read_only(fresh_cache, bframes_video) -> None:
    frames = sample_frames(bframes_video[0], 0.0, 1.0, nframes=2)
    with pytest.raises(ValueError, match="read-only"):
        frames.array[0, 0, 0, 0] = 1


def test_containers_are_pooled_across_calls(fresh_cache, bframes_video) -> None:
    path, _ = bframes_video
    for n in (2, 3, 4):
        sample_frames(path, 0.0, 2.0, nframes=n)
    assert decode_stats().containers_opened == 1


def test_rewritten_file_is_decoded_again(fresh_cache, tmp_path: Path) -> None:
    path = tmp_path / "v.mp4"
    write_video(path, barcoded(20), 25, encoding=Encoding(gop=10))
    assert draw.read_barcode(sample_frames(path, 0.0, 0.8, nframes=1).array[0]) == 10
    frames = barcoded(40)[20:]  # same length, barcodes 20..39
    write_video(tmp_path / "w.mp4", frames, 25, encoding=Encoding(gop=10))
    shutil.move(tmp_path / "w.mp4", path)
    os.utime(path, ns=(1, 1))  # a different mtime even on coarse clocks
    assert draw.read_barcode(sample_frames(path, 0.0, 0.8, nframes=1).array[0]) == 30
    assert decode_stats().misses == 2


def test_concurrent_identical_requests_decode_once(fresh_cache, long_video) -> None:
    path, _ = long_video
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda _: sample_frames(path, 5.0, 9.0, nframes=8), range(6)))
    stats = decode_stats()
    assert (stats.misses, stats.hits) == (1, 5)
    assert all(r is results[0] for r in results)
