"""Issue 48 item 6: `paravt data distill` that accepts no trace is a failure, not an empty success:
exit 2, one stderr line with report.json's counts and the fix, no ``sft.parquet`` left behind as if
it were valid input; report.json and progress.jsonl keep everything (a rerun retries errors)."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from scripted_teacher import RunningServer, unique_rows
from typer.testing import CliRunner

from paravt.cli import app as cli
from paravt.data.schema import write_rows


def _wrong_teacher() -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat() -> JSONResponse:
        text = "<think>\nno idea\n</think>\n<answer>no such option</answer>"
        return JSONResponse({"choices": [{"message": {"content": text}}]})

    return app


def test_a_distill_that_accepts_nothing_exits_2_and_writes_no_sft_parquet(
    synth: Path, tmp_path: Path
) -> None:
    write_rows(tmp_path / "qa.parquet", unique_rows(synth)[:2])
    out = tmp_path / "o"
    with RunningServer(_wrong_teacher()) as srv:
        res = CliRunner().invoke(
            cli,
            [
                "data",
                "distill",
                "--json",
                "--data",
                str(tmp_path / "qa.parquet"),
                "--root",
                str(synth),
                "--teacher",
                srv.url,
                "--teacher-model",
                "t",
                "--out",
                str(out),
                "--set",
                "max_retries=0",
                "--set",
                "llm_cleanup=false",
            ],
        )
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["accepted"] == 0 and report["finished"] == 2
    assert json.loads(res.stdout.strip().splitlines()[-1]) == report  # --json still prints it
    line = lines[0]
    assert "0 of 2 rows accepted" in line and "report.json" in line, line
    for reason, n in report["rejected"].items():
        assert f"{reason} {n}" in line, line
    assert not (out / "sft.parquet").exists()
    assert (out / "progress.jsonl").is_file()
