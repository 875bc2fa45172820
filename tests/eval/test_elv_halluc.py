"""ELV-Halluc: the loader's triplets, the yes/no reading and the SAH ratio on worked numbers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paravt.cli import app
from paravt.errors import DataError
from paravt.eval.benchmarks.elv_halluc import elv_report, sah_ratio, yes_no
from paravt.eval.benchmarks.registry import load_benchmark

sys.path.insert(0, str(Path(__file__).parent))
from bench_fixtures import build  # noqa: E402


@pytest.mark.parametrize(
    "text, want",
    [
        ("Yes.", "yes"),
        ("NO", "no"),
        ("I don't know", "no"),
        ("<think>yes? no</think>No", "no"),
        ("Unsure", None),
    ],
)
def test_yes_no_reads_like_the_benchmarks_script(text: str, want: str | None) -> None:
    assert yes_no(text) == want


def _triplet(
    t: int, aspect: str, gt: float, inv: float, outv: float
) -> list[tuple[str, str, str, float]]:
    return [
        (str(t), "ground_truth", aspect, gt),
        (str(t), "in_video", aspect, inv),
        (str(t), "out_video", aspect, outv),
    ]


def test_sah_is_the_share_of_in_video_errors_not_made_out_of_video() -> None:
    # 4 triplets, ground truth always accepted; the in-video caption rejected in 2, the
    # out-of-video one in 3: InAcc 0.5, OutAcc 0.75, SAH (0.75 − 0.5) / (1 − 0.5) = 0.5
    items = [
        *_triplet(0, "visual_details", 1, 1, 1),
        *_triplet(1, "visual_details", 1, 0, 1),
        *_triplet(2, "action", 1, 1, 1),
        *_triplet(3, "action", 1, 0, 0),
        ("9", "ground_truth", "action", 1.0),
    ]  # a triplet cut by --limit: not counted
    rep = elv_report(items)
    assert (rep["in_acc"], rep["out_acc"], rep["avg_acc"], rep["sah"]) == (50.0, 75.0, 62.5, 50.0)
    assert rep["incomplete_triplets"] == 1
    assert rep["by_aspect"]["Visual Details"] == {
        "n_triplets": 2,
        "in_acc": 50.0,
        "out_acc": 100.0,
        "avg_acc": 75.0,
        "sah": 100.0,
    }
    assert rep["by_aspect"]["Action"]["sah"] == 0.0
    # a rejected ground truth fails both pairs of its triplet
    assert elv_report(_triplet(0, "object", 0, 1, 1))["avg_acc"] == 0.0
    assert sah_ratio(1.0, 1.0) is None


def test_the_loader_reads_triplets_and_rejects_an_unknown_caption_type(tmp_path: Path) -> None:
    root = build("elv_halluc", tmp_path / "elv")
    samples = load_benchmark("elv_halluc", root)
    assert [s.meta["triplet"] for s in samples] == ["0", "0", "0", "1", "1", "1"]
    assert [s.answer for s in samples[:3]] == ["Yes", "No", "No"] and samples[0].task == "oe"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "ELV_Halluc.jsonl").write_text(
        json.dumps({"video": "x", "caption_type": "other", "ref_answer": "No"}) + "\n"
    )
    with pytest.raises(DataError, match="caption_type"):
        load_benchmark("elv_halluc", bad, check_videos=False)


def test_eval_benchmark_elv_halluc_reports_sah_by_aspect(
    tiny_qwen3_dir: str, tmp_path: Path
) -> None:
    root = build("elv_halluc", tmp_path / "elv")
    out = tmp_path / "out"
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "--benchmark",
            "elv_halluc",
            "--root",
            str(root),
            "--model",
            tiny_qwen3_dir,
            "--out",
            str(out),
            "--prompt-class",
            "direct",
            "--max-new-tokens",
            "6",
        ],
    )
    assert res.exit_code == 0, res.output
    m = json.loads((out / "elv_halluc" / "direct" / "metrics.json").read_text())["benchmark"][
        "by_mode"
    ]["none"]["lmms"]
    assert m["n_triplets"] == 2 and set(m["by_aspect"]) == {"Visual Details", "Action"}
    assert m["headline"] == m["avg_acc"] and 0 <= m["avg_acc"] <= 100
