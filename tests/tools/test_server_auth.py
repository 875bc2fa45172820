"""Who may call the tool server (issue 34 item 7): a key from a file, sent as a Bearer token by
every client; 401 and nothing run without it; the key in no log line, message or result; no bind
beyond loopback without one. Real servers on 127.0.0.1 (a thread, and `paravt serve-tools`)."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from server_helpers import ServerThread
from tool_helpers import call

from paravt.config import ToolServerConfig, is_loopback, read_key_file
from paravt.errors import ConfigError
from paravt.tools import build_toolset
from paravt.tools.server.app import create_app
from paravt.tools.server.client import RemoteToolSet
from paravt.tools.server.wire import context_to_wire

KEY = "k3y-" + "x7Q9" * 8
WRONG = "k3y-" + "y7Q9" * 8
PAVT = str(Path(sys.executable).with_name("paravt"))


@pytest.fixture()
def key_file(tmp_path: Path) -> Path:
    p = tmp_path / "tool.key"
    p.write_text(KEY + "\n")
    return p


def _batch(ctx) -> bytes:  # noqa: ANN001
    item = {
        "session": "s" * 16,
        "trajectory_id": "t1",
        "context": context_to_wire(ctx),
        "calls": [{"name": "crop_video", "arguments": {"start_time": 0, "end_time": 2}}],
    }
    return json.dumps({"items": [item]}).encode()


def _counter(metrics: str, name: str) -> float:
    return sum(float(m) for m in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", metrics, re.M))


def test_a_call_without_or_with_a_wrong_key_gets_401_and_runs_nothing_the_right_key_runs(
    video, key_file, make_ctx
):
    cfg = ToolServerConfig(video_roots=[str(Path(video).parent)], api_key_file=str(key_file))
    with ServerThread(create_app(["crop_video"], cfg)) as srv:
        body = _batch(make_ctx(episode_id="auth"))
        none = httpx.post(srv.url + "/v1/batch", content=body)
        wrong = httpx.post(
            srv.url + "/v1/batch", content=body, headers={"Authorization": f"Bearer {WRONG}"}
        )
        basic = httpx.post(
            srv.url + "/v1/batch", content=body, headers={"Authorization": f"Basic {KEY}"}
        )
        other = [
            httpx.get(srv.url + p).status_code
            for p in ("/health", "/v1/tools", "/metrics", "/docs")
        ]
        right = {"Authorization": f"Bearer {KEY}"}
        before = httpx.get(srv.url + "/metrics", headers=right).text
        ok = httpx.post(srv.url + "/v1/batch", content=body, headers=right)
        after = httpx.get(srv.url + "/metrics", headers=right).text
    for resp in (none, wrong, basic):
        assert resp.status_code == 401 and resp.headers["www-authenticate"].startswith("Bearer")
        assert "API key" in resp.json()["error"] and KEY not in resp.text
    assert other == [401, 401, 401, 401]
    assert (
        _counter(before, "paravt_tool_requests_total") == 0
    )  # the refused batches never reached a handler
    assert _counter(before, "paravt_tool_calls_total") == 0
    assert _counter(before, "paravt_tool_unauthorized_total") == 7
    assert ok.status_code == 200 and ok.json()["results"][0]["observations"][0]["error"] is None
    assert _counter(after, "paravt_tool_calls_total") == 1 and KEY not in after


def test_the_toolset_client_sends_the_key_from_its_file_and_names_a_refusal(
    video, key_file, make_ctx, tmp_path
):
    (tmp_path / "wrong.key").write_text(WRONG)
    cfg = ToolServerConfig(video_roots=[str(Path(video).parent)], api_key_file=str(key_file))
    with ServerThread(create_app(["crop_video"], cfg)) as srv:
        for kw in ({}, {"server_key_file": str(tmp_path / "wrong.key")}):
            with pytest.raises(ConfigError, match="refused the key \\(401\\)") as refused:
                build_toolset(["crop_video"], server_url=srv.url, **kw)
            assert KEY not in str(refused.value) and WRONG not in str(refused.value)
        ts = build_toolset(["crop_video"], server_url=srv.url, server_key_file=str(key_file))
        assert isinstance(ts, RemoteToolSet)

        async def go():
            try:
                return await ts.run_calls(
                    make_ctx(episode_id="auth"), [call("crop_video", start_time=0, end_time=2)]
                )
            finally:
                await ts.aclose()

        (obs,) = asyncio.run(go())
    assert (
        obs.ok
        and obs.frames is not None
        and KEY not in repr(obs)
        and KEY not in repr(ts.__dict__.get("specs"))
    )


def test_key_files_that_are_missing_empty_or_not_a_key_are_config_errors_naming_the_file(tmp_path):
    empty, spaced, short = tmp_path / "empty", tmp_path / "spaced", tmp_path / "short"
    empty.write_text("\n\n")
    spaced.write_text("two words\n")
    short.write_text("abc\n")
    for path, msg in (
        (tmp_path / "nope", "cannot read"),
        (empty, "is empty"),
        (spaced, "is not a key"),
        (tmp_path, "not a regular file"),
    ):
        with pytest.raises(ConfigError, match=msg):
            read_key_file(path, "api_key_file")
    with pytest.raises(ConfigError, match="fewer than 16") as e:
        read_key_file(short, "api_key_file", min_chars=16)
    assert "abc" not in str(e.value)
    assert read_key_file(short, "x") == "abc"
    assert [is_loopback(h) for h in ("127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost")] == [
        True
    ] * 5
    assert [is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.5", "example.org", "")] == [False] * 5


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_tools_refuses_to_bind_beyond_loopback_without_a_key(tmp_path):
    res = subprocess.run(
        [PAVT, "serve-tools", "--host", "0.0.0.0", "--port", str(_port())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "beyond loopback" in lines[0] and "--api-key-file" in lines[0]
    empty = tmp_path / "empty.key"
    empty.write_text("")
    bad = subprocess.run(
        [PAVT, "serve-tools", "--api-key-file", str(empty)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "is empty" in bad.stderr and "Traceback" not in bad.stderr


def test_serve_tools_with_a_key_file_serves_only_callers_that_send_it_and_never_logs_it(key_file):
    port = _port()
    proc = subprocess.Popen(
        [PAVT, "serve-tools", "--port", str(port), "--api-key-file", str(key_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url, right = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {KEY}"}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                first = httpx.get(url + "/health", timeout=1)
                break
            except httpx.HTTPError:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "server did not start in 60 s"
                time.sleep(0.2)
        wrong = httpx.get(url + "/v1/tools", headers={"Authorization": f"Bearer {WRONG}"})
        ok = httpx.get(url + "/v1/tools", headers=right)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert first.status_code == 401 and wrong.status_code == 401
    assert ok.status_code == 200 and [t["name"] for t in ok.json()] == ["crop_video"]
    assert "key required" in err and KEY not in out + err and WRONG not in out + err
