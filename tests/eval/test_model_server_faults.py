"""Issue 41 item 2: a model server that refuses or fails stops `paravt eval` and `paravt infer` at
once with one line naming the URL and the cause (exit 2); rows that fail mid-eval carry their error
in results.jsonl, a count on stderr and in metrics.json; a run whose rows all failed never exits 0;
a rerun runs the failed rows again. Also item 4 end to end: a model that writes a call nested 990
deep is scored, not a traceback. Every server is a loopback one in this process; the commands run
through the real app (``paravt.cli.app``, its root error handler) in this process, which spares
each one the import of torch."""

from __future__ import annotations

import json
import logging
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from typer.testing import CliRunner

from paravt.cli import app
from paravt.data.synth.build import build

sys.path.insert(0, str(Path(__file__).parents[1]))
from live_server import RunningServer, free_port  # noqa: E402

LOGIN_PAGE = "<html><body>Sign in to the proxy</body></html>"
DEEP_CALL = "<tool_call>crop_video(" + "[" * 990 + "]" * 990 + ", 5)</tool_call>"


@dataclass
class Script:
    """What the fake server does: the status of each completion request in turn (200 answers
    ``text``; the last status repeats, or with ``cycle`` the list starts over), and the key it
    wants (None: no key)."""

    statuses: list[int] = field(default_factory=lambda: [200])
    text: str = "<answer>A</answer>"
    key: str | None = None
    models_status: int = 200
    served: int = 0
    cycle: bool = False
    not_json: tuple[str, ...] = ()  # routes ("models", "chat") that answer 200 with an HTML page


def fake_server(script: Script) -> FastAPI:
    """An OpenAI-compatible server without a model: fixed answers, scripted failures."""
    app = FastAPI()

    def refused(request: Request) -> JSONResponse | None:
        if script.key and request.headers.get("authorization") != f"Bearer {script.key}":
            return JSONResponse({"error": "invalid api key"}, status_code=401)
        return None

    @app.get("/v1/models")
    async def models(request: Request) -> Any:
        if (no := refused(request)) is not None:
            return no
        if script.models_status != 200:
            return JSONResponse({"error": "down"}, status_code=script.models_status)
        if "models" in script.not_json:
            return HTMLResponse(LOGIN_PAGE)
        return {"object": "list", "data": [{"id": "fake", "object": "model"}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        if (no := refused(request)) is not None:
            return no
        n = len(script.statuses)
        status = script.statuses[script.served % n if script.cycle else min(script.served, n - 1)]
        script.served += 1
        if status != 200:
            return JSONResponse({"error": f"scripted {status}"}, status_code=status)
        if "chat" in script.not_json:
            return HTMLResponse(LOGIN_PAGE)
        message = {"role": "assistant", "content": script.text}
        return {"choices": [{"message": message, "finish_reason": "stop"}]}

    return app


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = Path(tmp_path_factory.mktemp("synth"))
    build(root, videos=1, eval_videos=2, seed=3)  # 6 eval rows
    return root / "eval.parquet"


def run_eval(
    url: str, processor: str, data: Path, out: Path, *extra: str, mode: str = "none"
) -> Result:
    args = ["eval", "--model", url, "--processor", processor, "--data", str(data)]
    args += ["--limit", "2", "--nframes", "2", "--mode", mode, "--workers", "1"]
    args += ["--out", str(out), "--max-new-tokens", "8", "--set", "model.max_retries=1", *extra]
    return CliRunner().invoke(app, args)


def one_line(res: Result) -> str:
    lines = [ln for ln in res.stderr.splitlines() if ln and not ln.startswith("settings:")]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    return lines[0]


@pytest.mark.timeout(240)
def test_a_dead_refusing_or_failing_server_stops_eval_at_once(
    data: Path, tiny_qwen3_dir: str, tmp_path: Path
) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    proc = run_eval(dead, tiny_qwen3_dir, data, tmp_path / "dead")
    assert proc.exit_code == 2
    line = one_line(proc)
    assert f"model server {dead} cannot be used: connection refused" in line
    assert not (tmp_path / "dead" / "results.jsonl").exists()

    key = tmp_path / "key"
    key.write_text("the-wrong-key\n")
    failing = Script(key="the-right-key")
    with RunningServer(fake_server(failing)) as srv:
        proc = run_eval(
            srv.url, tiny_qwen3_dir, data, tmp_path / "k", "--set", f"model.api_key_file={key}"
        )
        assert proc.exit_code == 2
        assert f"refused the key (401; sent the key of {key})" in one_line(proc)
        assert "the-wrong-key" not in proc.stderr  # the key itself is never shown
        failing.key, failing.models_status = None, 503
        proc = run_eval(srv.url, tiny_qwen3_dir, data, tmp_path / "5xx")
        assert proc.exit_code == 2
        assert "no reply (failed after 2 attempts: HTTP 503" in one_line(proc)
    assert failing.served == 0  # no episode ever asked


@pytest.mark.timeout(240)
def test_a_server_that_answers_200_with_a_page_that_is_not_json_is_named_by_its_url(
    data: Path, tiny_qwen3_dir: str, tmp_path: Path
) -> None:
    """Issue 48 item 4: a proxy's login page (200, HTML) on /models fails the pre-check; on the
    completions only, every row fails and the last line still names the URL that answered."""
    script = Script(not_json=("models",))
    with RunningServer(fake_server(script)) as srv:
        proc = run_eval(srv.url, tiny_qwen3_dir, data, tmp_path / "models")
        assert proc.exit_code == 2
        line = one_line(proc)
        assert f"{srv.url}/v1/models" in line, line
        assert "is not JSON" in line and "Sign in to the proxy" in line
        assert "an OpenAI-compatible server" in line  # the fix: point model.path at one
        assert script.served == 0  # no episode ever asked
        assert not (tmp_path / "models" / "results.jsonl").exists()

        script.not_json = ("chat",)
        proc = run_eval(srv.url, tiny_qwen3_dir, data, tmp_path / "chat")
        assert proc.exit_code == 2
        line = one_line(proc)
        assert f"{srv.url}/v1/chat/completions" in line and "is not JSON" in line, line


@pytest.mark.timeout(240)
def test_failed_rows_carry_their_error_all_failed_exits_2_and_a_rerun_retries_them(
    data: Path, tiny_qwen3_dir: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "ev"
    script = Script(statuses=[500])  # /models answers, every completion fails
    with RunningServer(fake_server(script)) as srv:
        proc = run_eval(srv.url, tiny_qwen3_dir, data, out)
        assert proc.exit_code == 2
        line = one_line(proc)
        assert "eval measured nothing: 2 of 2 rows" in line and "HTTP 500" in line
        rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
        assert [r["end_reason"] for r in rows] == ["error", "error"]
        assert all("failed after 2 attempts: HTTP 500" in r["error"] for r in rows)
        failed = json.loads((out / "metrics.json").read_text())["failed_rows"]
        assert failed["n"] == failed["of"] == 2 and "HTTP 500" in failed["examples"][0]["error"]

        # the server recovers for one row: that row is run again, the other fails again
        script.statuses, script.served = [200, 500], 0
        proc = run_eval(srv.url, tiny_qwen3_dir, data, out)
        assert proc.exit_code == 0, proc.stderr
        warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any(w.startswith("1 of 2 rows of") and "HTTP 500" in w for w in warned), warned
        metrics = json.loads((out / "metrics.json").read_text())
        assert metrics["failed_rows"]["n"] == 1 and metrics["summary"]["n"] == 1
        assert metrics["summary"]["n_failed"] == 1
        assert len((out / "results.jsonl").read_text().splitlines()) == 4  # appended, not lost

        script.statuses = [200]
        proc = run_eval(srv.url, tiny_qwen3_dir, data, out)
        assert proc.exit_code == 0, proc.stderr
        metrics = json.loads((out / "metrics.json").read_text())
        assert "failed_rows" not in metrics and metrics["summary"]["end_reasons"] == {"answer": 2}


@pytest.mark.timeout(240)
def test_rows_that_failed_are_not_scored_as_wrong_answers(
    data: Path, tiny_qwen3_dir: str, tmp_path: Path
) -> None:
    """Issue 48 item 5: a server that fails every other completion (400: not retried). The failed
    rows stay in results.jsonl with their error but out of n and out of every accuracy; their
    count stands beside the table: metrics.json (n_failed, per group), the console table and
    the HTML report."""
    from paravt.report.page import build_report

    out = tmp_path / "half"
    # rows e0000-mcq (B), -tvg, -oe, e0001-mcq (D), -tvg, -oe: each task's second row fails
    script = Script(statuses=[200, 400], cycle=True, text="<answer>B</answer>")
    with RunningServer(fake_server(script)) as srv:
        res = run_eval(srv.url, tiny_qwen3_dir, data, out, "--limit", "6")
    assert res.exit_code == 0, res.stderr
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    bad = [r for r in rows if r["end_reason"] == "error"]
    ok = [r for r in rows if r["end_reason"] != "error"]
    assert len(rows) == 6 and len(bad) == 3 and all("HTTP 400" in r["error"] for r in bad)
    assert {r["task"] for r in bad} == {"mcq", "tvg", "oe"}  # every task lost one row
    metrics = json.loads((out / "metrics.json").read_text())
    s = metrics["summary"]
    assert (s["n"], s["n_failed"]) == (3, 3) and s["end_reasons"] == {"answer": 3}
    assert s["score"] == pytest.approx(sum(r["score"] for r in ok) / 3)
    mcq_ok = [r["score"] for r in ok if r["task"] == "mcq"]
    assert mcq_ok == [1.0] and s["mcq_acc"] == 1.0  # e0000-mcq: B, right; e0001-mcq failed
    for task in ("mcq", "tvg", "oe"):
        assert metrics["by_task"][task]["n"] == metrics["by_task"][task]["n_failed"] == 1
    assert metrics["by_mode"]["none"]["summary"]["n_failed"] == 3
    assert metrics["failed_rows"]["n"] == 3

    lines = [re.split("[│┃]", ln) for ln in res.stdout.splitlines()]
    header = next(c for c in lines if len(c) > 2 and c[1].strip() == "mode")
    row = next(c for c in lines if len(c) > 2 and c[1].strip() == "none")
    cells = dict(zip([c.strip() for c in header], [c.strip() for c in row]))
    assert cells["n"] == "3" and cells["failed"] == "3", res.stdout

    page = build_report([out], tmp_path / "report.html").read_text(encoding="utf-8")
    head = page.split('<table id="eval-table">')[1].split("</table>")[0]
    assert '<th class="">failed</th>' in head
    first = head.split("</tr>")[1]
    assert ">3</td>" in first.split("<td")[3] and ">3</td>" in first.split("<td")[4]


@pytest.mark.timeout(240)
def test_a_server_that_fails_every_completion_stops_eval_after_the_first_rows(
    data: Path, tiny_qwen3_dir: str, tmp_path: Path
) -> None:
    """/models answers, every completion fails: the run stops after FAIL_FAST_ROWS rows instead of
    spending the retry policy on every row of the set."""
    from paravt.eval.runner import FAIL_FAST_ROWS

    out = tmp_path / "ff"
    script = Script(statuses=[503])
    with RunningServer(fake_server(script)) as srv:
        res = run_eval(
            srv.url, tiny_qwen3_dir, data, out, "--limit", "6", "--set", "model.max_retries=0"
        )
    assert res.exit_code == 2
    line = one_line(res)
    assert (
        f"eval stopped: the model server failed every request of the first {FAIL_FAST_ROWS} rows"
        in line
    )
    assert "HTTP 503" in line and "a rerun retries them" in line
    rows = (out / "results.jsonl").read_text().splitlines()
    assert len(rows) == FAIL_FAST_ROWS < 6 and script.served == FAIL_FAST_ROWS


@pytest.mark.timeout(240)
def test_hostile_model_text_is_scored_and_infer_stops_on_a_failing_server(
    data: Path, tiny_qwen3_dir: str, tmp_path: Path
) -> None:
    script = Script(text=DEEP_CALL + "<answer>A</answer>")
    with RunningServer(fake_server(script)) as srv:
        proc = run_eval(srv.url, tiny_qwen3_dir, data, tmp_path / "deep", mode="parallel")
        assert proc.exit_code == 0, proc.stderr
        rows = [
            json.loads(x) for x in (tmp_path / "deep" / "results.jsonl").read_text().splitlines()
        ]
        assert len(rows) == 2 and all(r["error"] is None for r in rows)
        calls = [c for r in rows for c in r["calls"]]
        assert calls and all("nested more than 64 deep" in c["error"] for c in calls)

        script.statuses = [503]
        video = next((data.parent / "videos").rglob("*.mp4"))
        args = ["infer", "--model", srv.url, "--processor", tiny_qwen3_dir]
        args += ["--video", str(video), "--question", "what?", "--set", "model.max_retries=0"]
        proc = CliRunner().invoke(app, args)
    assert proc.exit_code == 2 and "Traceback" not in proc.stderr
    assert "the episode failed: failed after 1 attempts: HTTP 503" in proc.stderr
