from __future__ import annotations

from pathlib import Path

import numpy as np

from paravt.data.synth.scenes import (
    Needle,
    Scene,
    VideoSpec,
    caught_by_overview,
    iter_frames,
    make_spec,
    nearest_frame,
    overview_indices,
)
from paravt.video import Encoding, draw, sample_frames, write_video


def _spec(duration: int, fps: int, start: float, end: float, color: str = "red") -> VideoSpec:
    scene = Scene(0.0, float(duration), (100, 100, 100), ())
    return VideoSpec("t", duration, fps, 64, 64, (scene,), Needle("flash", start, end, color))


def test_nearest_frame_ties_go_to_the_earlier_frame() -> None:
    # D=60 s, fps 2, n=8: slot width 7.5 s, t_0 = 3.75 s → 7.5 frames → tie → frame 7
    assert nearest_frame(3.75, 2, 120) == 7
    assert nearest_frame(3.76, 2, 120) == 8
    assert overview_indices(_spec(60, 2, 10, 13), 8) == (7, 22, 37, 52, 67, 82, 97, 112)


def test_needle_caught_only_when_an_overview_frame_lands_inside_it() -> None:
    # D=60, fps 1, n=4: targets 7.5, 22.5, 37.5, 52.5 → frames 7, 22, 37, 52 (ties go down)
    assert caught_by_overview(_spec(60, 1, 20, 23), 4)  # frames 20, 21, 22 hold the needle
    assert not caught_by_overview(_spec(60, 1, 23, 30), 4)  # 23..29: between 22 and 37
    assert caught_by_overview(_spec(60, 1, 23, 30), 64)


def test_specs_respect_the_design_ranges() -> None:
    for i in range(40):
        s = make_spec(f"v{i}", np.random.default_rng([1, i]))
        assert 60 <= s.duration <= 300 and s.fps in (1, 2)
        assert 3 <= s.needle.end - s.needle.start <= 8
        assert 0 < s.needle.start and s.needle.end < s.duration
        lengths = [sc.end - sc.start for sc in s.scenes]
        assert s.scenes[0].start == 0 and s.scenes[-1].end == s.duration
        assert all(20 <= x for x in lengths) and all(
            x <= 80 for x in lengths
        )  # last may absorb a < 20 s tail
        assert all(a.rgb != b.rgb for a, b in zip(s.scenes, s.scenes[1:]))


def test_decoded_overview_shows_the_flash_exactly_when_predicted(tmp_path: Path) -> None:
    spec = _spec(90, 2, 40, 43, "blue")
    path = write_video(tmp_path / "v.mp4", iter_frames(spec), spec.fps, encoding=Encoding(gop=20))
    for n in (4, 8, 16, 32, 64):
        frames = sample_frames(path, 0.0, 90.0, nframes=n)
        seen = any(
            draw.nearest_color(f.reshape(-1, 3).mean(0)) == "blue"
            and f.reshape(-1, 3).mean(0)[2] > 180
            for f in frames.array
        )
        assert seen == caught_by_overview(spec, n), n
