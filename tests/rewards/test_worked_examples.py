"""docs/rewards.md's worked table == `paravt score` on tests/rewards/worked_examples.jsonl."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "tests" / "rewards" / "worked_examples.jsonl"
YES_NO = {"yes": True, "no": False}


def doc_table() -> list[dict[str, str]]:
    lines = (
        (ROOT / "docs" / "rewards.md").read_text().split("## Worked examples", 1)[1].splitlines()
    )
    rows = [ln for ln in lines if ln.startswith("| ")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in r.strip("|").split("|")))) for r in rows[1:]]


@pytest.fixture(scope="module")
def scored() -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-c", "from paravt.cli import app; app()", "score", "--in", str(EXAMPLES)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(ln) for ln in proc.stdout.splitlines()]


def test_table_has_the_nine_examples(scored: list[dict]) -> None:
    table = doc_table()
    cases = [json.loads(ln)["case"] for ln in EXAMPLES.read_text().splitlines()]
    assert len(table) == len(scored) == 9
    assert [r["case"].replace("`", "") for r in table] == cases


@pytest.mark.parametrize("i", range(9))
def test_every_cell_matches_paravt_score(scored: list[dict], i: int) -> None:
    row, out = doc_table()[i], scored[i]
    for key in ("reward", "acc", "format", "format_base", "anchor", "tool"):
        assert out[key] == pytest.approx(float(row[key]), abs=1e-6), key
    assert out["n_calls"] == int(row["n_calls"])
    assert out["answer"] == (None if row["answer"] == "—" else row["answer"])
    assert (
        out["degenerate"] is YES_NO[row["degenerate"]]
        and out["tool_code"] is YES_NO[row["tool_code"]]
    )
    assert out["closed"] == {
        "think": YES_NO[row["think"]],
        "tool_call": YES_NO[row["tool_call"]],
        "answer": YES_NO[row["answer_closed"]],
    }


def test_the_other_settings_change_only_row_one_s_tool_reward() -> None:
    # docs/rewards.md: under format_rules paravt every cell is the same; with tool_sees_responses
    # row 1's two executed calls reach the 0.3 level: tool 0.8, reward 2.6
    from paravt.protocol.tags import with_prefix
    from paravt.rewards import RewardWeights, compute_reward

    table = doc_table()
    for rules, sees in (("paravt", False), ("release", True), ("paravt", True)):
        w = RewardWeights.default(format_rules=rules, tool_sees_responses=sees)
        for i, line in enumerate(EXAMPLES.read_text().splitlines()):
            ex = json.loads(line)
            b = compute_reward(
                with_prefix(ex["prefix"], ex["completion"]),
                task=ex["task"],
                answer=ex["answer"],
                options=ex.get("options"),
                prefix="",
                weights=w,
                successful_calls=ex.get("successful_calls"),
                generated=ex["completion"],
            )
            bump = 0.2 if sees and i == 0 else 0.0
            assert b.format == pytest.approx(float(table[i]["format"]), abs=1e-6)
            assert b.tool == pytest.approx(float(table[i]["tool"]) + bump, abs=1e-6)
            assert b.reward == pytest.approx(float(table[i]["reward"]) + bump, abs=1e-6)
