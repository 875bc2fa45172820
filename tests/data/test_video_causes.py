"""Issue 41 item 3: a video too short for the processor's temporal patch is a screening cause
(``video_too_short``; a valid 1-frame mp4 used to run with 0 visual tokens and pass `data check`),
and a FIFO, a device, a symlink loop or a directory is named as what it is (they were all "does
not exist"). Through the real app (``paravt.cli.app``) for `data check`, `eval` and `infer`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from paravt.cli import app
from paravt.data.rows import ExtraInfo, Message, RLRow
from paravt.data.schema import write_rows
from paravt.data.screen import screen_rows
from paravt.errors import VideoError
from paravt.video import probe, sample_frames
from paravt.video.usable import MIN_FRAMES
from paravt.video.writer import write_video

#: row id → (video path under the root, cause, words its detail must hold)
CASES = {
    "ok": ("videos/two.mp4", None, ""),
    "one-frame": (
        "videos/one.mp4",
        "video_too_short",
        "has 1 frame; the processor needs at least 2",
    ),
    "one-frame-4fps": ("videos/one4.mp4", "video_too_short", "has 1 frame"),
    "fifo": ("videos/fifo.mp4", "video_unreadable", "is a FIFO (named pipe), not a regular file"),
    "dev-zero": (
        "videos/zero.mp4",
        "video_unreadable",
        "is a character device (a symlink to '/dev/zero')",
    ),
    "loop": ("videos/loop.mp4", "video_unreadable", "is a symlink loop"),
    "dir": ("videos/dir.mp4", "video_unreadable", "is a directory"),
    "dangling": ("videos/dangling.mp4", "video_missing", "does not exist (a symlink to"),
    "missing": ("videos/none.mp4", "video_missing", "does not exist under the data root"),
}


def _row(rid: str, video: str) -> RLRow:
    extra = ExtraInfo(
        id=rid, task="mcq", question="Which?", answer="A", duration=2.0, options=("A. x", "B. y")
    )
    return RLRow(rid, (Message("user", "Which?"),), (video,), extra)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("video-causes")
    v = d / "videos"
    v.mkdir()
    frame = np.full((32, 32, 3), 90, np.uint8)
    write_video(v / "one.mp4", [frame], 1)
    write_video(v / "one4.mp4", [frame], 4)
    write_video(v / "two.mp4", [frame, frame], 1)
    os.mkfifo(v / "fifo.mp4")
    os.symlink("/dev/zero", v / "zero.mp4")
    os.symlink(v / "loop2.mp4", v / "loop.mp4")
    os.symlink(v / "loop.mp4", v / "loop2.mp4")
    (v / "dir.mp4").mkdir()
    os.symlink(v / "gone.mp4", v / "dangling.mp4")
    write_rows(d / "all.parquet", [_row(rid, video) for rid, (video, _, _) in CASES.items()])
    write_rows(d / "short.parquet", [_row("one-frame", "videos/one.mp4")])
    return d


def test_each_video_is_screened_under_its_real_cause(root: Path) -> None:
    s = screen_rows(root / "all.parquet", max_row_bytes=1 << 20, warn=False)
    assert [r.id for r in s.rows] == ["ok"]
    got = {e.id: e for e in s.errors}
    for rid, (_, cause, words) in CASES.items():
        if cause is not None:
            assert got[rid].cause == cause and words in got[rid].detail, (rid, got[rid])


def test_the_video_layer_names_them_too(root: Path) -> None:
    v = root / "videos"
    for name, words in (("fifo", "FIFO"), ("zero", "character device"), ("loop", "symlink loop")):
        with pytest.raises(VideoError, match=words):
            probe(v / f"{name}.mp4")
    assert probe(v / "one.mp4").num_frames == 1 < MIN_FRAMES  # the probe reports it as it is
    with pytest.raises(VideoError, match="has 1 frame; .* use a longer video"):
        sample_frames(v / "one.mp4", 0.0, 1.0, nframes=4)  # was: "the file is truncated"
    assert sample_frames(v / "two.mp4", 0.0, 2.0, nframes=4).array.shape[0] >= MIN_FRAMES


def test_data_check_reports_every_cause_by_row(root: Path) -> None:
    res = CliRunner().invoke(app, ["data", "check", str(root / "all.parquet"), "--json"])
    assert res.exit_code == 1, res.stderr
    report = json.loads(res.stdout)
    assert report["by_rule"] == {"video_missing": 2, "video_too_short": 2, "video_unreadable": 4}
    details = {v["row"]: v["detail"] for v in report["violations"]}
    assert "FIFO" in details["fifo"] and "does not exist" not in details["loop"]


def test_eval_and_infer_refuse_a_one_frame_video_by_name(root: Path, tiny_qwen3_dir: str) -> None:
    args = ["eval", "--model", tiny_qwen3_dir, "--data", str(root / "short.parquet")]
    res = CliRunner().invoke(app, [*args, "--out", str(root / "ev")])
    assert res.exit_code == 2 and "video_too_short" in res.stderr and "Traceback" not in res.stderr
    for video, words in (("one.mp4", "has 1 frame"), ("fifo.mp4", "is a FIFO")):
        res = CliRunner().invoke(
            app,
            [
                "infer",
                "--model",
                tiny_qwen3_dir,
                "--video",
                str(root / "videos" / video),
                "--question",
                "q",
            ],
        )
        assert res.exit_code == 2 and words in res.stderr, res.stderr
