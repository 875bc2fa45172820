"""Tiny benchmark directories in each benchmark's published on-disk layout, with real (synthetic)
H.264 videos: a few seconds of flat colour at 2 fps, 64×48. ``build(name, root)`` writes one and
returns its directory; ``corrupt=True`` replaces the first video by bytes no decoder opens."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from paravt.video import write_video
from paravt.video.draw import solid


def _video(path: Path, seconds: int = 3, shade: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_video(
        path,
        [solid(48, 64, ((40 * i + shade) % 255, 90, 160)) for i in range(2 * seconds)],
        fps=2.0,
    )


def _videomme(root: Path) -> list[Path]:
    (root / "videomme").mkdir(parents=True)
    ids = ["vidA", "vidB", "vidC"]
    pq.write_table(
        pa.table(
            {
                "videoID": ids,
                "question_id": ["001-1", "002-1", "003-1"],
                "duration": ["short", "medium", "long"],
                "domain": ["Knowledge"] * 3,
                "sub_category": ["Astronomy"] * 3,
                "task_type": ["Counting Problem", "OCR Problems", "Counting Problem"],
                "question": ["How many stars?", "What is written?", "How many cars?"],
                "options": [["A. 1", "B. 2", "C. 3", "D. 4"]] * 3,
                "answer": ["C", "A", "B"],
            }
        ),
        root / "videomme" / "test-00000-of-00001.parquet",
    )
    (root / "subtitle").mkdir()
    (root / "subtitle" / "vidA.srt").write_text("1\n00:00:00,500 --> 00:00:01,500\nthree stars\n")
    return [root / "data" / f"{i}.mp4" for i in ids]


def _longvideobench(root: Path) -> list[Path]:
    recs = [
        {
            "id": f"lvb{i}",
            "video_path": f"lvb{i}.mp4",
            "duration": 3.0,
            "question": "What colour?",
            "candidates": ["red", "green", "blue", "black"],
            "correct_choice": i % 4,
            "question_category": "S2E",
            "duration_group": 15,
        }
        for i in range(2)
    ]
    (root / "lvb_val.json").write_text(json.dumps(recs))
    return [root / "videos" / f"lvb{i}.mp4" for i in range(2)]


def _lvbench(root: Path) -> list[Path]:
    line = {
        "key": "lvbKEY",
        "type": "cartoon",
        "video_info": {"duration_minutes": 0.05},
        "qa": [
            {
                "uid": str(i),
                "question": "Who wins?\n(A) Tom\n(B) Jerry\n(C) Spike\n(D) Nobody",
                "answer": "AB"[i],
                "question_type": ["reasoning"],
                "time_reference": "00:01-00:02",
            }
            for i in range(2)
        ],
    }
    (root / "video_info.meta.jsonl").write_text(json.dumps(line) + "\n")
    return [root / "videos" / "lvbKEY.mp4"]


def _mlvu(root: Path) -> list[Path]:
    (root / "json").mkdir(parents=True)
    for stem, qt in (("1_plotQA", "plotQA"), ("4_count", "count")):
        (root / "json" / f"{stem}.json").write_text(
            json.dumps(
                [
                    {
                        "video": f"{stem}.mp4",
                        "duration": 3.0,
                        "question": "Which?",
                        "candidates": ["one", "two", "three", "four"],
                        "answer": "two",
                        "question_type": qt,
                    }
                ]
            )
        )
    return [root / "video" / s / f"{s}.mp4" for s in ("1_plotQA", "4_count")]


def _mmvu(root: Path) -> list[Path]:
    recs = [
        {
            "id": f"m{i}",
            "question": "Which law?",
            "choices": {"A": "Ohm", "B": "Hooke", "C": "Snell", "D": "Boyle", "E": "Pascal"},
            "answer": "B",
            "question_type": "multiple-choice",
            "metadata": {"subject": subj},
            "video": f"https://huggingface.co/datasets/yale-nlp/MMVU/resolve/main/videos/{subj}/{i}.mp4",
        }
        for i, subj in enumerate(("Biology", "Law"))
    ]
    (root / "validation.json").write_text(json.dumps(recs))
    return [root / "videos" / r["metadata"]["subject"] / f"{r['id'][1:]}.mp4" for r in recs]


def _charades(root: Path) -> list[Path]:
    (root / "charades_sta_test.txt").write_text(
        "AAAAA 0.5 2.0##person turns on the light.\nBBBBB 1.0 2.5##person opens a door.\n"
    )
    (root / "Charades_v1_test.csv").write_text(
        "id,subject,scene,length\nAAAAA,x,Kitchen,3.0\nBBBBB,x,Hall,3.0\n"
    )
    return [root / "Charades_v1_480" / f"{v}.mp4" for v in ("AAAAA", "BBBBB")]


def _elv(root: Path) -> list[Path]:
    lines = []
    for t, aspect in enumerate(("visual_details", "action")):
        for ctype, ref in (("ground_truth", "Yes"), ("in_video", "No"), ("out_video", "No")):
            lines.append(
                {
                    "video": "elv0.mp4",
                    "aspect": aspect,
                    "caption_type": ctype,
                    "ref_answer": ref,
                    "part_nums": 3,
                    "question": "Is the following caption totally correct? Reply with 'Yes' or "
                    "'No' only. "
                    f"Caption {t}-{ctype}.",
                }
            )
    (root / "ELV_Halluc.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return [root / "videos" / "elv0.mp4"]


BUILDERS: dict[str, Callable[[Path], list[Path]]] = {
    "elv_halluc": _elv,
    "videomme": _videomme,
    "longvideobench": _longvideobench,
    "lvbench": _lvbench,
    "mlvu": _mlvu,
    "mmvu": _mmvu,
    "charades_sta": _charades,
}


def build(name: str, root: Path, *, corrupt: bool = False, seconds: int = 3) -> Path:
    """Write benchmark ``name`` (videomme_sub shares videomme's layout) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    videos = BUILDERS["videomme" if name == "videomme_sub" else name](root)
    for i, v in enumerate(videos):
        _video(v, seconds=seconds, shade=17 * i)
    if corrupt:
        videos[0].write_bytes(b"not a video at all")
    return root
