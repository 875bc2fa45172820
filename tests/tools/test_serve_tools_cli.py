import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def test_serve_tools_command_serves_health_and_the_requested_tools():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).with_name("paravt")
    proc = subprocess.Popen(
        [
            str(exe),
            "serve-tools",
            "--port",
            str(port),
            "--tools",
            "frame_select,crop_video",
            "--max-concurrency",
            "3",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(url + "/health", timeout=1).json()
                break
            except httpx.HTTPError:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "server did not start in 60 s"
                time.sleep(0.2)
        tools = httpx.get(url + "/v1/tools").json()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert health["tools"] == ["crop_video", "frame_select"] and health["max_concurrency"] == 3
    assert [t["name"] for t in tools] == ["frame_select", "crop_video"]
    assert tools[0]["parameters"]["required"] == ["start_time", "end_time", "nframes"]


def test_serve_tools_rejects_an_unknown_tool_with_a_suggestion():
    exe = Path(sys.executable).with_name("paravt")
    res = subprocess.run(
        [str(exe), "serve-tools", "--tools", "crop_video,pyton"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2
    assert "Did you mean 'python'?" in " ".join((res.stdout + res.stderr).split())


def test_serve_tools_takes_its_limits_from_flags_config_and_set_and_checks_the_video_roots(
    tmp_path,
):
    exe = Path(sys.executable).with_name("paravt")
    cfg = tmp_path / "server.yaml"
    cfg.write_text("max_calls_per_request: 7\nmax_runtimes: 3\n")
    shown = subprocess.run(
        [
            str(exe),
            "serve-tools",
            "--config",
            str(cfg),
            "--video-root",
            str(tmp_path),
            "--max-runtimes",
            "5",
            "--set",
            "header_timeout_s=2.5",
            "--show-config",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    missing = subprocess.run(
        [str(exe), "serve-tools", "--video-root", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert (
        f"video_roots:\n- {tmp_path}\n" in shown.stdout
        and "max_calls_per_request: 7" in shown.stdout
    )
    assert (
        "max_runtimes: 5" in shown.stdout and "header_timeout_s: 2.5" in shown.stdout
    )  # flags win
    assert missing.returncode == 2 and "are not directories" in " ".join(missing.stderr.split())


def test_a_malformed_config_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "server.yaml"
    bad.write_text("max_concurrency: [1,\n")  # not YAML
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from paravt.cli import app; app()",
            "serve-tools",
            "--config",
            str(bad),
            "--show-config",
        ],
        capture_output=True,
        text=True,
    )
    assert (
        proc.returncode == 2 and "not valid YAML" in proc.stderr and "Traceback" not in proc.stderr
    )
