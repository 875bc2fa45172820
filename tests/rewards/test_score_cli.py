import json
import subprocess
import sys
from pathlib import Path

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
