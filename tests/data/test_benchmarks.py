"""Each loader on a tiny fixture written in the benchmark's published layout."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paravt.errors import DataError
from paravt.eval.benchmarks.registry import load_benchmark


def _touch(p: Path) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"")


def test_videomme_with_and_without_subtitles(tmp_path: Path) -> None:
    (tmp_path / "videomme").mkdir()
    pq.write_table(
        pa.table(
            {
                "video_id": ["001"],
                "duration": ["short"],
                "domain": ["Knowledge"],
                "sub_category": ["x"],
                "url": ["u"],
                "videoID": ["fFjv93ACGo8"],
                "question_id": ["001-1"],
                "task_type": ["Counting Problem"],
                "question": ["How many?"],
                "options": [["A. 1", "B. 2", "C. 3", "D. 4"]],
                "answer": ["C"],
            }
        ),
        tmp_path / "videomme" / "test-00000-of-00001.parquet",
    )
    _touch(tmp_path / "data" / "fFjv93ACGo8.mp4")
    (tmp_path / "subtitle").mkdir()
    (tmp_path / "subtitle" / "fFjv93ACGo8.srt").write_text(
        "1\n00:00:01,000 --> 00:00:02,000\n<i>hello</i> there\n"
    )
    (s,) = load_benchmark("videomme", tmp_path)
    assert (s.id, s.task, s.answer, s.options[2], s.subset) == (
        "001-1",
        "mcq",
        "C",
        "C. 3",
        "short",
    )
    assert s.question == "How many?"
    (sub,) = load_benchmark("videomme_sub", tmp_path)
    assert sub.question == "Subtitles:\nhello there\nHow many?" and sub.benchmark == "videomme_sub"


def test_longvideobench_maps_the_choice_index_to_a_letter(tmp_path: Path) -> None:
    (tmp_path / "lvb_val.json").write_text(
        json.dumps(
            [
                {
                    "id": "86CxyhFV9MI_0",
                    "video_id": "86CxyhFV9MI",
                    "video_path": "86CxyhFV9MI.mp4",
                    "duration": 1200.5,
                    "question": "What is shown?",
                    "candidates": ["a cat", "a dog", "a bird"],
                    "correct_choice": 2,
                    "question_category": "S2E",
                    "duration_group": 3600,
                }
            ]
        )
    )
    _touch(tmp_path / "videos" / "86CxyhFV9MI.mp4")
    (s,) = load_benchmark("longvideobench", tmp_path)
    assert (s.answer, s.options, s.duration) == ("C", ("A. a cat", "B. a dog", "C. a bird"), 1200.5)


def test_lvbench_splits_options_out_of_the_question(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    line = {
        "key": "TTPd0I6-rwg",
        "type": "cartoon",
        "video_info": {"duration_minutes": 65.5},
        "qa": [
            {
                "uid": "1",
                "question": "Who wins?\n(A) Tom\n(B) Jerry\n(C) Spike\n(D) Nobody",
                "answer": "B",
                "question_type": ["reasoning"],
                "time_reference": "03:10-03:20",
            }
        ],
    }
    (tmp_path / "data" / "video_info.meta.jsonl").write_text(json.dumps(line) + "\n")
    _touch(tmp_path / "videos" / "TTPd0I6-rwg.mp4")
    (s,) = load_benchmark("lvbench", tmp_path)
    assert s.question == "Who wins?" and s.options == (
        "A. Tom",
        "B. Jerry",
        "C. Spike",
        "D. Nobody",
    )
    assert (s.answer, s.duration, s.meta["time_reference"]) == ("B", 3930.0, "03:10-03:20")


def test_mlvu_answer_text_becomes_a_letter_and_generation_tasks_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "json").mkdir()
    (tmp_path / "json" / "1_plotQA.json").write_text(
        json.dumps(
            [
                {
                    "video": "movie101_66.mp4",
                    "duration": 246.0,
                    "question": "What colour is the car?",
                    "candidates": ["red", "green", "blue", "black"],
                    "answer": "blue",
                    "question_type": "plotQA",
                }
            ]
        )
    )
    (tmp_path / "json" / "8_sub_scene.json").write_text(
        json.dumps([{"video": "x.mp4", "question": "Describe.", "answer": "text"}])
    )
    _touch(tmp_path / "video" / "1_plotQA" / "movie101_66.mp4")
    (s,) = load_benchmark("mlvu", tmp_path)
    assert (s.answer, s.subset, s.options[2]) == ("C", "plotQA", "C. blue")


def test_mmvu_keeps_multiple_choice_and_resolves_the_url_to_a_local_file(tmp_path: Path) -> None:
    (tmp_path / "validation.json").write_text(
        json.dumps(
            [
                {
                    "id": "a1",
                    "question": "Which law?",
                    "choices": {
                        "A": "Ohm",
                        "B": "Hooke",
                        "C": "Snell",
                        "D": "Boyle",
                        "E": "Pascal",
                    },
                    "answer": "B",
                    "question_type": "multiple-choice",
                    "metadata": {"subject": "Physics"},
                    "video": "https://huggingface.co/datasets/yale-nlp/MMVU/resolve/main/videos/Physics/12.mp4",
                },
                {
                    "id": "a2",
                    "question": "Explain.",
                    "choices": {},
                    "answer": "because",
                    "question_type": "open-ended",
                    "metadata": {"subject": "Art"},
                    "video": "https://x/videos/Art/1.mp4",
                },
            ]
        )
    )
    _touch(tmp_path / "videos" / "Physics" / "12.mp4")
    (s,) = load_benchmark("mmvu", tmp_path)
    assert (s.id, s.answer, len(s.options), s.subset) == ("a1", "B", 5, "Physics")
    assert s.video.endswith("videos/Physics/12.mp4")


def test_charades_sta_builds_grounding_questions_with_durations(tmp_path: Path) -> None:
    (tmp_path / "charades_sta_test.txt").write_text("3MSZA 24.3 30.4##person turns on the light.\n")
    (tmp_path / "Charades_v1_test.csv").write_text(
        "id,subject,scene,length\n3MSZA,HR43,Kitchen,31.96\n"
    )
    _touch(tmp_path / "Charades_v1_480" / "3MSZA.mp4")
    (s,) = load_benchmark("charades_sta", tmp_path)
    assert (s.task, s.answer, s.duration) == ("tvg", "[24.3, 30.4]", 31.96)
    assert '"person turns on the light"' in s.question


def test_missing_videos_are_listed_in_one_error(tmp_path: Path) -> None:
    (tmp_path / "charades_sta_test.txt").write_text("AAAAA 1 2##a.\nBBBBB 3 4##b.\n")
    with pytest.raises(DataError, match=r"2 video\(s\) missing") as e:
        load_benchmark("charades_sta", tmp_path)
    assert "AAAAA.mp4" in str(e.value) and "BBBBB.mp4" in str(e.value)
    assert len(load_benchmark("charades_sta", tmp_path, check_videos=False)) == 2
    with pytest.raises(DataError, match="available"):
        load_benchmark("nope", tmp_path)
