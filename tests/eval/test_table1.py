"""The Table-1-style table: our benchmark runs beside the paper's quoted rows."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from paravt.cli import app
from paravt.eval.benchmarks.table1 import QUOTED, table1_rows
from paravt.report.table1 import table1_html


def _metrics(out: Path, bench: str, pc: str, by_mode: dict) -> Path:
    d = out / bench / pc
    d.mkdir(parents=True)
    p = d / "metrics.json"
    p.write_text(
        json.dumps(
            {
                "summary": {"n": 1},
                "benchmark": {"name": bench, "protocol": {"prompt_class": pc}, "by_mode": by_mode},
            }
        )
    )
    return p


def _mode(headline: float, n: int) -> dict:
    return {"headline": headline, "scoring": "lmms", "lmms": {"n": n, "headline": headline}}


def test_one_row_per_run_class_and_mode_beside_the_quoted_paper_rows(tmp_path: Path) -> None:
    files = [
        _metrics(
            tmp_path / "ckpt500",
            "videomme",
            "agentic",
            {"parallel": _mode(61.0, 900), "sequential": _mode(60.0, 900)},
        ),
        _metrics(tmp_path / "ckpt500", "charades_sta", "agentic", {"parallel": _mode(48.2, 3720)}),
        _metrics(tmp_path / "ckpt500", "mlvu", "direct", {"none": _mode(55.5, 2174)}),
    ]
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "metrics.json").write_text(
        json.dumps({"summary": {}})
    )  # not a benchmark run: skipped
    rows = table1_rows([*files, tmp_path / "plain" / "metrics.json"])
    assert [(r.label, r.source) for r in rows[:2]] == [
        ("Qwen3-VL-8B", QUOTED),
        ("ParaVT-8B", QUOTED),
    ]
    assert rows[1].values["charades_sta"] == 50.1 and rows[0].values["lvbench"] == 33.1
    ours = {r.label: r for r in rows[2:]}
    assert set(ours) == {
        "ckpt500 · agentic · parallel",
        "ckpt500 · agentic · sequential",
        "ckpt500 · direct · none",
    }
    par = ours["ckpt500 · agentic · parallel"]
    assert par.values == {"videomme": 61.0, "charades_sta": 48.2} and par.n == {
        "videomme": 900,
        "charades_sta": 3720,
    }
    page = table1_html(rows)
    assert "paper (quoted)" in page and "61.0 <span class='muted'>(n=900)</span>" in page


def test_paravt_report_prints_the_table(tmp_path: Path) -> None:
    _metrics(tmp_path / "run", "lvbench", "reasoning", {"none": _mode(40.25, 10)})
    res = CliRunner().invoke(app, ["report", str(tmp_path), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert "40.2" in res.output and "39.8" in res.output  # ours beside ParaVT-8B's quoted LVBench
    assert 'id="table1"' in (tmp_path / "r.html").read_text()
