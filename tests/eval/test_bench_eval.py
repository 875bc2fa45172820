"""`paravt eval --benchmark` end to end on tiny benchmark directories with a tiny model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paravt.cli import app
from paravt.eval.benchmarks.protocol import score_rows
from paravt.eval.benchmarks.registry import load_benchmark
from paravt.eval.results import load_results

sys.path.insert(0, str(Path(__file__).parent))
from bench_fixtures import build  # noqa: E402

FAST = ["--max-new-tokens", "12", "--workers", "3"]


def _eval(*args: str) -> object:
    res = CliRunner().invoke(app, ["eval", *args, *FAST], catch_exceptions=False)
    return res


def test_videomme_writes_the_table_and_a_benchmark_section_by_duration(
    tiny_qwen3_dir: str, tmp_path: Path
) -> None:
    root = build("videomme", tmp_path / "vmme")
    out = tmp_path / "out"
    res = _eval(
        "--benchmark", "videomme", "--root", str(root), "--model", tiny_qwen3_dir, "--out", str(out)
    )
    assert res.exit_code == 0, res.output
    assert "videomme" in res.output and "parallel" in res.output
    d = out / "videomme" / "agentic"
    rows = load_results(d / "results.jsonl")
    assert sorted(r.id for r in rows) == ["001-1", "002-1", "003-1"] and {r.mode for r in rows} == {
        "parallel"
    }
    assert all(r.nframes == 3 for r in rows)  # 3 s video at 1 fps (cap 64)
    m = json.loads((d / "metrics.json").read_text())["benchmark"]
    assert m["protocol"] == {
        "fps": 1.0,
        "max_frames": 64,
        "max_pixels": 224 * 224,
        "prompt_class": "agentic",
        "protocol": "release",
        "scoring": "lmms",
        "decoding": "greedy",
    }
    par = m["by_mode"]["parallel"]
    assert set(par["lmms"]["by_duration"]) == {"short", "medium", "long"}
    assert set(par["lmms"]["by_task_type"]) == {"Counting Problem", "OCR Problems"}
    assert (
        par["headline"] == par["lmms"]["headline"]
        and par["lmms"]["n"] == 3
        and par["errors"] == {"video": 0, "backend": 0}
    )
    assert 0 <= par["headline"] <= 100 and par["tokens_per_question"]["main_visual"] > 0
    assert par["calls_per_question"] >= 0 and 0 <= par["tool_use_rate"] <= 1
    # --scoring paravt re-reads the completion exactly as the episode's reward did
    samples = {s.id: s for s in load_benchmark("videomme", root)}
    ours = score_rows("videomme", rows, samples, "paravt")
    assert [it.scored.score for it in ours] == [r.score for r in rows]


def test_charades_reports_recalls_and_miou_and_a_broken_video_counts_wrong(
    tiny_qwen3_dir: str, tmp_path: Path
) -> None:
    root = build("charades_sta", tmp_path / "ch", corrupt=True)
    out = tmp_path / "out"
    res = _eval(
        "--benchmark",
        "charades_sta",
        "--root",
        str(root),
        "--model",
        tiny_qwen3_dir,
        "--out",
        str(out),
        "--prompt-class",
        "direct",
    )
    assert res.exit_code == 0, res.output
    m = json.loads((out / "charades_sta" / "direct" / "metrics.json").read_text())["benchmark"][
        "by_mode"
    ]["none"]
    lm = m["lmms"]
    assert lm["n"] == 2 and lm["errors"] == 1 and m["errors"]["video"] == 1  # kept, scored 0
    assert {"R@0.3", "R@0.5", "R@0.7", "mIoU"} <= set(lm) and m["headline_metric"] == "mIoU"
    assert lm["R@0.3"] >= lm["R@0.5"] >= lm["R@0.7"]
    rows = load_results(out / "charades_sta" / "direct" / "results.jsonl")
    assert len(rows) == 2 and all(
        r.transcript and not r.transcript[0].text.startswith("<think>") for r in rows
    )


def test_reasoning_class_runs_mode_none_and_resumes_by_id(
    tiny_qwen3_dir: str, tmp_path: Path
) -> None:
    root = build("mlvu", tmp_path / "mlvu")
    out = tmp_path / "out"
    args = (
        "--benchmark",
        "mlvu",
        "--root",
        str(root),
        "--model",
        tiny_qwen3_dir,
        "--out",
        str(out),
        "--prompt-class",
        "reasoning",
        "--scoring",
        "paravt",
    )
    assert _eval(*args, "--limit", "1").exit_code == 0
    assert _eval(*args).exit_code == 0
    d = out / "mlvu" / "reasoning"
    rows = load_results(d / "results.jsonl")
    assert len(rows) == 2 and {r.mode for r in rows} == {"none"}  # the first row was not re-run
    m = json.loads((d / "metrics.json").read_text())["benchmark"]["by_mode"]["none"]
    assert m["scoring"] == "paravt" and m["headline"] == m["paravt"]["headline"]
    assert set(m["lmms"]["by_task_type"]) == {"plotQA", "count"}
    assert set(m["lmms"]["missing_task_types"]) == {
        "anomaly_reco",
        "ego",
        "needle",
        "order",
        "topic_reasoning",
    }


@pytest.mark.parametrize(
    "args, message",
    [
        (["--benchmark", "nope", "--root", "."], "available"),
        (["--benchmark", "videomme"], "--root"),
    ],
)
def test_bad_benchmark_arguments_are_clear_errors(
    args: list[str], message: str, tiny_qwen3_dir: str
) -> None:
    res = _eval(*args, "--model", tiny_qwen3_dir)
    assert res.exit_code == 2 and message in res.output


def test_missing_videos_are_the_loaders_clear_error(tiny_qwen3_dir: str, tmp_path: Path) -> None:
    root = build("mmvu", tmp_path / "mmvu")
    (root / "videos" / "Law" / "1.mp4").unlink()
    res = _eval(
        "--benchmark",
        "mmvu",
        "--root",
        str(root),
        "--model",
        tiny_qwen3_dir,
        "--out",
        str(tmp_path / "o"),
    )
    assert res.exit_code == 2 and "1 video(s) missing" in res.output


def test_score_with_a_benchmark_rule_prints_pred_and_score_per_line(tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_text(
        "\n".join(
            [
                json.dumps(
                    {"completion": "<think>maybe A</think>The best answer is C.", "answer": "C"}
                ),
                json.dumps(
                    {
                        "completion": "no idea",
                        "answer": "A",
                        "options": ["A. x", "B. y"],
                        "id": "q1",
                    }
                ),
                "not json",
            ]
        )
        + "\n"
    )
    res = CliRunner().invoke(app, ["score", "--benchmark", "longvideobench", "--in", str(f)])
    lines = [json.loads(x) for x in res.output.splitlines()]
    assert res.exit_code == 0 and lines[0] == {"pred": "C", "score": 1.0}
    assert lines[1]["random"] is True and lines[1]["pred"] in "AB" and "error" in lines[2]
    tvg = tmp_path / "tvg.jsonl"
    tvg.write_text(
        json.dumps({"completion": "It happens in 2 - 4 s", "answer": "[1.0, 3.0]"}) + "\n"
    )
    res = CliRunner().invoke(app, ["score", "--benchmark", "charades_sta", "--in", str(tvg)])
    out = json.loads(res.output)
    assert out["pred"] == "[2.0, 4.0]" and out["score"] == pytest.approx(1 / 3)


def test_a_bad_layout_is_the_loaders_clear_error_and_nframes_caps_the_overview(
    tiny_qwen3_dir: str, tmp_path: Path
) -> None:
    (tmp_path / "empty").mkdir()
    res = _eval(
        "--benchmark",
        "lvbench",
        "--root",
        str(tmp_path / "empty"),
        "--model",
        tiny_qwen3_dir,
        "--out",
        str(tmp_path / "o"),
    )
    assert res.exit_code == 2 and "no annotation file" in res.output
    root = build("lvbench", tmp_path / "lvb", seconds=4)
    res = _eval(
        "--benchmark",
        "lvbench",
        "--root",
        str(root),
        "--model",
        tiny_qwen3_dir,
        "--out",
        str(tmp_path / "o"),
        "--nframes",
        "2",
        "--prompt-class",
        "direct",
        "--limit",
        "1",
    )
    assert res.exit_code == 0, res.output
    (row,) = load_results(tmp_path / "o" / "lvbench" / "direct" / "results.jsonl")
    assert row.nframes == 2  # a 4 s video at 1 fps, capped at 2


def test_several_benchmarks_under_one_root_then_the_report_table(
    tiny_qwen3_dir: str, tmp_path: Path
) -> None:
    root = tmp_path / "bench"
    build("videomme", root / "videomme")  # videomme_sub reads the same directory (subtitles/)
    build("charades_sta", root / "charades_sta")
    out = tmp_path / "runs" / "tiny"
    res = _eval(
        "--benchmark",
        "videomme,videomme_sub,charades_sta",
        "--root",
        str(root),
        "--model",
        tiny_qwen3_dir,
        "--out",
        str(out),
        "--prompt-class",
        "reasoning",
        "--limit",
        "2",
    )
    assert res.exit_code == 0, res.output
    sub = load_results(out / "videomme_sub" / "reasoning" / "results.jsonl")
    by_id = {r.id: r for r in sub}
    assert set(by_id) == {"001-1", "002-1"} and by_id["001-1"].question.startswith(
        "Subtitles:\nthree stars"
    )
    res = CliRunner().invoke(
        app, ["report", str(tmp_path / "runs"), "-o", str(tmp_path / "r.html")]
    )
    assert res.exit_code == 0, res.output
    page = (tmp_path / "r.html").read_text()
    assert "tiny · reasoning · none" in page and page.count("(n=2)") == 3  # three measured cells
