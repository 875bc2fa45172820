"""`paravt data distill` keeps every row and has one writer (issue 28, items 1, 2, 7, 8): a
progress file whose last line a kill cut in half resumes to all 12 rows; a second run on the same
``--out`` is refused naming the first; an oversized or malformed teacher reply is that row's
teacher error, never an exception."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from scripted_teacher import RunningServer, State, make_app, scripts_for, unique_rows
from typer.testing import CliRunner

from paravt.cli import app as cli
from paravt.data.rows import SFTRow
from paravt.data.schema import read_rows, write_rows
from paravt.jsonl import read_jsonl
from paravt.runlock import LOCK_NAME

runner = CliRunner()


def _distill(args: list[str], exit_code: int = 0) -> dict:
    """The JSON report of one run (exit 2 when it accepted nothing: issue 48 item 6)."""
    res = runner.invoke(cli, ["data", "distill", "--json", *args])
    assert res.exit_code == exit_code, res.output
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_a_progress_line_torn_by_a_kill_loses_no_row_on_resume(synth: Path, tmp_path: Path) -> None:
    rows = unique_rows(synth)[:12]
    write_rows(tmp_path / "qa.parquet", rows)
    teacher = State(scripts_for(rows))
    out = tmp_path / "out"
    args = [
        "--data",
        str(tmp_path / "qa.parquet"),
        "--root",
        str(synth),
        "--teacher-model",
        "t",
        "--workers",
        "3",
        "--out",
        str(out),
    ]
    with RunningServer(make_app(teacher)) as srv:
        first = _distill([*args, "--teacher", srv.url])
        assert first["accepted"] == 12
        prog = out / "progress.jsonl"
        lines = prog.read_text().splitlines(keepends=True)
        torn_id = json.loads(lines[-1])["id"]
        prog.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # kill -9 mid-write
        asked = teacher.requests
        second = _distill([*args, "--teacher", srv.url])
        assert (
            second["skipped_finished"] == 11 and teacher.requests > asked
        )  # only the torn row ran again
        asked = teacher.requests
        third = _distill([*args, "--teacher", srv.url])
        assert teacher.requests == asked  # nothing left to do
    assert second["accepted"] == 12 and third["accepted"] == 12 and third["skipped_finished"] == 12
    recs = read_jsonl(prog)
    assert len(recs) == 12 and {r["id"] for r in recs} == {r.id for r in rows}
    assert [r["id"] for r in recs][-1] == torn_id
    mains = [
        r for r in read_rows(out / "sft.parquet") if isinstance(r, SFTRow) and r.kind == "main"
    ]
    assert len(mains) == 12


HOLD = """
import sys, time
from paravt import runlock
with runlock.hold(sys.argv[1], "paravt data distill"):
    print("held", flush=True)
    time.sleep(30)
"""


def test_a_second_distill_on_the_same_out_is_refused_naming_the_first(
    synth: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "held"
        res = runner.invoke(
            cli,
            [
                "data",
                "distill",
                "--data",
                str(synth / "rl.parquet"),
                "--teacher",
                "http://127.0.0.1:9",
                "--teacher-model",
                "t",
                "--out",
                str(out),
            ],
        )
    finally:
        first.kill()
        first.wait(10)
    assert (
        res.exit_code != 0
        and f"pid {first.pid}" in res.output
        and "one writer per output directory" in res.output
    )
    assert (
        not (out / "progress.jsonl").exists() and (out / LOCK_NAME).exists()
    )  # the holder's, left by the kill


def _hostile_app(reply: dict) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat() -> JSONResponse:
        return JSONResponse(reply)

    return app


@pytest.mark.parametrize(
    ("reply", "detail"),
    [
        (
            {"choices": [{"message": {"content": "<answer>" + "x" * (2 << 20) + "</answer>"}}]},
            "reply too large",
        ),
        (
            {
                "choices": [{"message": {"content": "<answer>A</answer>"}}],
                "usage": {"prompt_tokens": "abc"},
            },
            "malformed chat completion: usage",
        ),
    ],
)
def test_an_oversized_or_malformed_reply_is_that_rows_teacher_error(
    synth: Path, tmp_path: Path, reply: dict, detail: str
) -> None:
    rows = unique_rows(synth)[:2]
    write_rows(tmp_path / "qa.parquet", rows)
    with RunningServer(_hostile_app(reply)) as srv:
        report = _distill(
            [
                "--data",
                str(tmp_path / "qa.parquet"),
                "--root",
                str(synth),
                "--teacher",
                srv.url,
                "--teacher-model",
                "t",
                "--keep-incorrect",
                "--out",
                str(tmp_path / "o"),
                "--set",
                "max_reply_bytes=1048576",
                "--set",
                "max_retries=0",
            ],
            exit_code=2,
        )
    assert (
        report["errored"] == 2
        and report["teacher_errors"]["primary"] == 2
        and report["accepted"] == 0
    )
    recs = read_jsonl(tmp_path / "o" / "progress.jsonl")
    assert all(r["reason"] == "teacher_error" and detail in r["detail"] for r in recs), recs
