import json
import subprocess
import sys
from pathlib import Path

from test_judge import server  # noqa: F401 - the toy judge server fixture

CLI = [sys.executable, "-c", "from paravt.cli import app; app()", "score"]
GOOD = {"completion": "I checked the overview.\n</think>\n<answer>A</answer>", "task": "mcq", "answer": "A"}


def test_bad_lines_become_errors_and_config_and_summary_apply(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    lines = [json.dumps(GOOD), "not json", json.dumps({**GOOD, "task": "essay"}),
             json.dumps({**GOOD, "successful_calls": -1}), json.dumps({**GOOD, "prefix": ""})]
    src.write_text("\n".join(lines) + "\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("reward:\n  bias: 0.0\n  anchor: false\n")
    proc = subprocess.run([*CLI, "--in", str(src), "--config", str(cfg), "--summary"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(ln) for ln in proc.stdout.splitlines()]
    assert len(out) == 5 and [("error" in o) for o in out] == [False, True, True, True, False]
    # no anchor, no bias: 1 + 1.0 (capped base) = 2.0; without the prefix: base 0.5 -> 1.5
    assert out[0]["reward"] == 2.0 and out[0]["anchor"] == 0.0 and out[4]["reward"] == 1.5
    assert list(out[0]) == ["reward", "acc", "format", "format_base", "anchor", "tool", "answer",
                            "degenerate", "closed", "tool_code", "n_calls"]
    assert "f_tau" in proc.stderr and "acc/task/mcq" in proc.stderr  # the summary table


def test_unreadable_file_exits_2(tmp_path: Path) -> None:
    proc = subprocess.run([*CLI, "--in", str(tmp_path / "missing.jsonl")], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""


def test_open_ended_rows_go_to_the_configured_judge(tmp_path: Path, server) -> None:
    url, state = server
    oe = {"completion": "Looked.\n</think>\n<answer>red</answer>", "task": "oe", "answer": "red cat",
          "question": "What flashed?"}
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in (oe, GOOD, {**oe, "question": 3})) + "\n")
    cfg = tmp_path / "judge.yaml"
    cfg.write_text(f"reward:\n  judge_url: {url}\n  judge_timeout_s: 5\n")
    plain = subprocess.run([*CLI, "--in", str(src)], capture_output=True, text=True)
    judged = subprocess.run([*CLI, "--in", str(src), "--config", str(cfg), "--summary"],
                            capture_output=True, text=True)
    assert plain.returncode == judged.returncode == 0, judged.stderr
    plain_rows, judged_rows = ([json.loads(ln) for ln in p.stdout.splitlines()] for p in (plain, judged))
    assert round(plain_rows[0]["acc"], 4) == 0.6667  # token F1 of "red" against "red cat"
    assert judged_rows[0]["acc"] == 0.5  # the toy judge: shares a word -> 0.5
    assert judged_rows[1] == plain_rows[1]  # MCQ is never sent to the judge
    assert "error" in judged_rows[2] and '"question"' in judged_rows[2]["error"]
    assert state.requests == 1 and "judge/judged" in judged.stderr
