import json
import subprocess
import sys
from pathlib import Path

from test_judge import server  # noqa: F401 - the toy judge server fixture

from paravt.rewards import TERM_NAMES

CLI = [sys.executable, "-c", "from paravt.cli import app; app()", "score"]
GOOD = {
    "completion": "I checked the overview.\n</think>\n<answer>A</answer>",
    "task": "mcq",
    "answer": "A",
}


def test_bad_lines_become_errors_and_config_and_summary_apply(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    lines = [
        json.dumps(GOOD),
        "not json",
        json.dumps({**GOOD, "task": "essay"}),
        json.dumps({**GOOD, "successful_calls": -1}),
        json.dumps({**GOOD, "prefix": "<think>\n"}),
    ]
    src.write_text("\n".join(lines) + "\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("reward:\n  bias: 0.0\n  anchor: false\n")
    proc = subprocess.run(
        [*CLI, "--in", str(src), "--config", str(cfg), "--summary"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(ln) for ln in proc.stdout.splitlines()]
    assert len(out) == 5 and [("error" in o) for o in out] == [False, True, True, True, False]
    # no anchor, no bias. As written (no <think>): base <answer> 0.3 + </answer> 0.2 = 0.5 -> 1.5;
    # with the line's prefix: think 0.2 + 0.3 + 0.2 + balanced 0.1 = 0.8 (no tool call) -> 1.8
    assert out[0]["reward"] == 1.5 and out[0]["anchor"] == 0.0 and out[4]["reward"] == 1.8
    assert out[4]["format_ref"] == 1.0  # the yardstick keeps the anchor: min(0.8 + 0.35, 1)
    assert out[4]["format_generated"] == 0.5  # the line's own text, without its prefix
    assert list(out[0]) == [
        "reward",
        *TERM_NAMES,
        "format_base",
        "anchor",
        "format_generated",
        "format_ref",
        "answer",
        "degenerate",
        "closed",
        "tool_code",
        "n_calls",
    ]
    assert TERM_NAMES == ("acc", "format", "tool")
    assert "f_tau" in proc.stderr and "acc/task/mcq" in proc.stderr  # the summary table
    assert (
        "line 2: line is not JSON" in proc.stderr and "line 3:" in proc.stderr
    )  # errors on stderr


def test_think_prefix_flag_adds_the_prefix_once(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    written = {**GOOD, "completion": "<think>\n" + GOOD["completion"]}
    src.write_text("\n".join(json.dumps(r) for r in (GOOD, written)) + "\n")
    proc = subprocess.run(
        [*CLI, "--in", str(src), "--think-prefix"], capture_output=True, text=True
    )
    a, b = (json.loads(ln) for ln in proc.stdout.splitlines())
    # the prefix is added to the first line only: never "<think>\n<think>"; only f_tau's text (the
    # line's own completion, without the added prefix) differs
    assert a.pop("format_generated") == 0.5 and b.pop("format_generated") == 1.0
    assert a == b
    assert a["closed"]["think"] and a["anchor"] == 0.7 and a["format"] == 1.0  # the joint cap


PAPER_D = Path(__file__).parents[1] / "rewards" / "paper_appendix_d.jsonl"


def test_paper_appendix_d_rollouts_score_as_printed() -> None:
    proc = subprocess.run([*CLI, "--in", str(PAPER_D)], capture_output=True, text=True)
    ex1, ex2, ex3 = (json.loads(ln) for ln in proc.stdout.splitlines())
    for ex in (ex1, ex3):  # SFT greedy and PARA-GRPO: think closed, answer closed, 2 calls
        assert ex["closed"]["think"] and ex["closed"]["answer"] and ex["n_calls"] == 2
        assert ex["anchor"] == 0.7 and not ex["tool_code"]
        assert not ex["closed"]["tool_call"] and ex["tool"] == 0.0  # python-call style is not JSON
    # early vanilla RL: think never closed, a <tool_code> reversion, no answer
    assert not ex2["closed"]["think"] and ex2["tool_code"] and ex2["anchor"] == -0.3
    assert not ex2["closed"]["answer"] and ex2["n_calls"] == 0


def test_unreadable_file_exits_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*CLI, "--in", str(tmp_path / "missing.jsonl")], capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stdout == ""


def test_open_ended_rows_go_to_the_configured_judge(tmp_path: Path, server) -> None:
    url, state = server
    oe = {
        "completion": "Looked.\n</think>\n<answer>red</answer>",
        "task": "oe",
        "answer": "red cat",
        "question": "What flashed?",
    }
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in (oe, GOOD, {**oe, "question": 3})) + "\n")
    cfg = tmp_path / "judge.yaml"
    cfg.write_text(f"reward:\n  judge_url: {url}\n  judge_timeout_s: 5\n")
    plain = subprocess.run([*CLI, "--in", str(src)], capture_output=True, text=True)
    judged = subprocess.run(
        [*CLI, "--in", str(src), "--config", str(cfg), "--summary"], capture_output=True, text=True
    )
    assert plain.returncode == judged.returncode == 0, judged.stderr
    plain_rows, judged_rows = (
        [json.loads(ln) for ln in p.stdout.splitlines()] for p in (plain, judged)
    )
    assert round(plain_rows[0]["acc"], 4) == 0.6667  # token F1 of "red" against "red cat"
    assert judged_rows[0]["acc"] == 0.5  # the toy judge: shares a word -> 0.5
    assert judged_rows[1] == plain_rows[1]  # MCQ is never sent to the judge
    assert "error" in judged_rows[2] and '"question"' in judged_rows[2]["error"]
    assert state.requests == 1 and "judge/judged" in judged.stderr
