from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from paravt.data.authors import import_file
from paravt.data.rows import VideoPart
from paravt.data.schema import read_rows
from paravt.video import write_video


def _media(root: Path) -> None:
    (root / "selfqa").mkdir(parents=True)
    frames = [np.full((32, 32, 3), 10 * i, np.uint8) for i in range(12)]
    write_video(root / "selfqa" / "a.mp4", frames, 2.0)  # 6 s


def test_rl_release_rows_import_with_sentinel_paths_and_missing_media_reported(
    tmp_path: Path,
) -> None:
    root = tmp_path / "src"
    _media(root)
    prompt = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "<video>\nWhat happens?"},
    ]
    table = pa.table(
        {
            "prompt": [prompt, prompt],
            "videos": [[{"video": "file://selfqa/a.mp4"}], [{"video": "museg/charades/zz.mp4"}]],
            "extra_info": [
                json.dumps({"answer": "[1, 3]", "question_type": "tvg"}),
                json.dumps({"answer": "x", "question_type": "oe"}),
            ],
        }
    )
    pq.write_table(table, tmp_path / "paravt_rl.parquet")
    rep = import_file(
        tmp_path / "paravt_rl.parquet", root=root, out_dir=tmp_path / "out", nframes=8
    )
    assert (rep.layout, rep.rows_in, rep.rows_out) == ("rl", 2, 1)
    assert rep.missing == ((1, "museg/charades/zz.mp4"),)
    (row,) = read_rows(rep.out)
    assert row.kind == "rl" and row.videos == ("selfqa/a.mp4",)
    assert (
        row.extra_info.task == "tvg"
        and row.extra_info.answer == "[1, 3]"
        and row.extra_info.question == "What happens?"
    )
    assert abs(row.extra_info.duration - 6.0) < 0.01
    part = row.messages[1].content[0]
    assert (
        isinstance(part, VideoPart)
        and part.nframes == 8
        and part.video_end == row.extra_info.duration
    )


def test_sft_release_rows_import_and_image_rows_are_reported_unsupported(tmp_path: Path) -> None:
    root = tmp_path / "src"
    _media(root)
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "video_url", "video_url": {"url": "selfqa/a.mp4"}},
                {"type": "text", "text": "Which colour?"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "<think>\nx\n</think>\n<answer>red</answer>"}],
        },
    ]
    img = [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "selfqa/i.png"}}]}
    ]
    pq.write_table(
        pa.table({"messages": [json.dumps(msgs), json.dumps(img)]}), tmp_path / "paravt_sft.parquet"
    )
    rep = import_file(
        tmp_path / "paravt_sft.parquet", root=root, out_dir=tmp_path / "out", nframes=64
    )
    assert (rep.layout, rep.rows_out, rep.unsupported) == ("sft", 1, {"image_or_other_media": 1})
    (row,) = read_rows(rep.out)
    assert row.kind == "main" and row.mode == "none" and row.extra_info.answer == "red"
    assert row.messages[0].text == "<video>Which colour?"
