from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paravt.data.rows import ExtraInfo, Message, RLRow, SFTRow, TextPart, VideoPart
from paravt.data.schema import read_rows, write_rows
from paravt.errors import DataError


def _extra(**kw) -> ExtraInfo:
    base = dict(
        id="v1-mcq",
        task="mcq",
        question="What colour?",
        answer="B",
        duration=90.0,
        options=("A. red", "B. blue"),
        nframes=8,
        subset="synth-flash",
        needle_start=10.0,
        needle_end=14.0,
        needle_kind="flash",
        tool_necessary_at_n={4: True, 64: False},
    )
    base.update(kw)
    return ExtraInfo(**base)


def test_rows_round_trip_through_parquet_unchanged(tmp_path: Path) -> None:
    video = VideoPart("videos/v1.mp4", 0.0, 90.0, 8)
    sft = SFTRow(
        "v1-mcq-par",
        "main",
        "parallel",
        (
            Message("system", "sys"),
            Message("user", (video, TextPart("\nQuestion: What colour?"))),
            Message("assistant", "<think>\nlook\n</think>\n<answer>B</answer>"),
            Message("tool", "[1] 00:00–00:30: nothing", summary="nothing brief"),
        ),
        ("videos/v1.mp4",),
        _extra(),
    )
    rl = RLRow(
        "v1-tvg",
        (Message("user", (video,)),),
        ("videos/v1.mp4",),
        _extra(task="tvg", answer="[10, 14]", options=None),
    )
    path = write_rows(tmp_path / "rows.parquet", [sft, rl])
    back = read_rows(path)
    assert back == [sft, rl]
    assert back[0].extra_info.tool_necessary_at_n == {4: True, 64: False}
    assert back[1].kind == "rl"


def test_tool_necessary_reads_the_rows_own_n() -> None:
    assert _extra(nframes=4).tool_necessary is True
    assert _extra(nframes=64).tool_necessary is False
    assert _extra(tool_necessary_at_n=None).tool_necessary is None


def test_message_text_shows_video_parts_as_markers() -> None:
    m = Message("user", (TextPart("a "), VideoPart("v.mp4", 0, 5, 2), TextPart(" b")))
    assert m.text == "a <video> b"


def test_same_rows_give_identical_parquet_content(tmp_path: Path) -> None:
    row = RLRow("x", (Message("user", "q"),), ("v.mp4",), _extra())
    a = write_rows(tmp_path / "a.parquet", [row])
    b = write_rows(tmp_path / "b.parquet", [row])
    assert pq.read_table(a).equals(pq.read_table(b))


def test_reading_a_release_layout_file_points_to_import(tmp_path: Path) -> None:
    p = tmp_path / "rl.parquet"
    pq.write_table(pa.table({"prompt": ["x"], "videos": [["a.mp4"]]}), p)
    with pytest.raises(DataError, match="paravt data import"):
        read_rows(p)


def test_bad_role_and_task_are_named(tmp_path: Path) -> None:
    rec = {
        "id": ["r"],
        "kind": ["main"],
        "mode": ["parallel"],
        "messages": ['[{"role": "robot", "content": "x"}]'],
        "videos": [["v.mp4"]],
        "extra_info": ['{"id": "r", "task": "mcq", "question": "q", "answer": "A", "duration": 1}'],
    }
    pq.write_table(pa.table(rec), tmp_path / "bad.parquet")
    with pytest.raises(DataError, match="role 'robot'"):
        read_rows(tmp_path / "bad.parquet")
    rec["messages"] = ['[{"role": "user", "content": "x"}]']
    rec["extra_info"] = [
        '{"id": "r", "task": "essay", "question": "q", "answer": "A", "duration": 1}'
    ]
    pq.write_table(pa.table(rec), tmp_path / "bad2.parquet")
    with pytest.raises(DataError, match="task 'essay'"):
        read_rows(tmp_path / "bad2.parquet")
