"""`paravt video probe|frames` end to end, and the contact sheet."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from paravt.cli import app
from paravt.video import Frames, draw, probe
from paravt.video.sheet import contact_sheet, format_timestamp


def test_probe_json_matches_the_library(bframes_video) -> None:
    result = CliRunner().invoke(app, ["video", "probe", str(bframes_video[0]), "--json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.output)
    info = probe(bframes_video[0])
    assert got["duration"] == info.duration == 4.0
    assert (got["num_frames"], got["width"], got["height"], got["codec"]) == (100, 64, 48, "h264")


def test_frames_writes_n_pngs_and_a_contact_sheet(tmp_path: Path, bframes_video) -> None:
    out = tmp_path / "frames"
    args = [
        "video",
        "frames",
        str(bframes_video[0]),
        "--start",
        "1",
        "--end",
        "3",
        "--nframes",
        "5",
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    pngs = sorted(p.name for p in out.glob("frame_*.png"))
    assert pngs == [f"frame_{i:03d}.png" for i in range(5)]
    # targets 1.2, 1.6, 2.0, 2.4, 2.8 s → frames 30, 40, 50, 60, 70
    barcodes = [
        draw.read_barcode(np.asarray(Image.open(out / name).convert("RGB"))) for name in pngs
    ]
    assert barcodes == [30, 40, 50, 60, 70]
    sheet = Image.open(out / "contact_sheet.png")
    assert sheet.width > 5 * 160  # 5 columns of 160 px thumbnails


def test_bad_file_exits_2_with_the_reason(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["video", "probe", str(tmp_path / "missing.mp4")])
    assert result.exit_code == 2
    assert "does not exist" in " ".join(result.output.split())  # rich wraps long lines


def test_contact_sheet_grid_size() -> None:
    frames = Frames(np.zeros((10, 48, 64, 3), np.uint8), tuple(float(i) for i in range(10)))
    sheet = contact_sheet(frames, cols=4, thumb_width=80)
    # 4 columns × (80 + 4 pad) + 4; 3 rows × (60 thumb + 16 label + 4 pad) + 4
    assert sheet.size == (4 * 84 + 4, 3 * 80 + 4)


@pytest.mark.parametrize(("t", "text"), [(7.5, "7.50s"), (83.25, "1:23.25"), (600.0, "10:00.00")])
def test_timestamp_format(t: float, text: str) -> None:
    assert format_timestamp(t) == text
