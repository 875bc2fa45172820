"""`paravt serve-model` without an engine: the command lines, the interpreter choice, and the
supervisor against a small stand-in server process (the real vLLM runs in test_vllm_real.py)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from paravt.errors import ConfigError
from paravt.servers.launch import ServeSpec, command, engine_args, engine_env, find_python
from paravt.servers.supervise import _alive, _children, supervise

SPEC = ServeSpec(
    model="/m",
    host="127.0.0.1",
    port=8123,
    engine="vllm",
    gpus=0,
    max_model_len=8192,
    max_videos=25,
    max_images=25,
)

STAND_IN = textwrap.dedent("""
    import http.server, json, subprocess, sys, time
    print("loading weights", flush=True)
    if sys.argv[1] == "fail":
        print("RuntimeError: no kernel for head_dim=16", flush=True)
        sys.exit(3)
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # an engine worker
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"data": [{"id": "stand-in"}]}).encode()
            self.send_response(200 if self.path == "/v1/models" else 404)
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    time.sleep(float(sys.argv[3]))
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[2])), H).serve_forever()
""")


def _port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_vllm_cpu_command_has_the_protocol_and_cpu_flags() -> None:
    args = engine_args(SPEC)
    joined = " ".join(args)
    assert (
        "--trust-request-mm-kwargs" in args
        and "--enforce-eager" in args
        and "--skip-mm-profiling" in args
    )
    assert json.loads(args[args.index("--limit-mm-per-prompt") + 1]) == {"image": 25, "video": 25}
    assert json.loads(args[args.index("--media-io-kwargs") + 1]) == {"video": {"num_frames": -1}}
    assert "--logprobs-mode processed_logprobs" in joined and "--max-model-len 8192" in joined
    assert (
        "--tensor-parallel-size" not in args and engine_env(SPEC)["VLLM_CPU_KVCACHE_SPACE"] == "2"
    )
    assert command("/py", SPEC)[:3] == ["/py", "-m", "vllm.entrypoints.openai.api_server"]


def test_gpu_and_sglang_commands() -> None:
    from dataclasses import replace

    gpu = engine_args(replace(SPEC, gpus=4))
    assert gpu[gpu.index("--tensor-parallel-size") + 1] == "4" and "--enforce-eager" not in gpu
    assert "VLLM_CPU_KVCACHE_SPACE" not in engine_env(replace(SPEC, gpus=4))
    sg = replace(SPEC, engine="sglang", gpus=2)
    assert command("/py", sg)[:3] == ["/py", "-m", "sglang.launch_server"]
    args = engine_args(sg)
    assert (
        args[args.index("--tp-size") + 1] == "2"
        and args[args.index("--context-length") + 1] == "8192"
    )


def test_interpreter_choice(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not an executable"):
        find_python("vllm", str(tmp_path / "nope"))
    assert find_python("vllm", sys.executable) == sys.executable
    venv_py = tmp_path / ".venv-vllm" / "bin" / "python"
    venv_py.parent.mkdir(parents=True)
    venv_py.write_text("")
    assert find_python("vllm", roots=(tmp_path / "other", tmp_path)) == str(venv_py)
    with pytest.raises(ConfigError, match="sglang is not importable"):
        find_python("sglang", roots=(tmp_path,))


def test_a_server_that_dies_during_startup_exits_non_zero_with_its_last_lines(
    tmp_path: Path,
) -> None:
    script = tmp_path / "srv.py"
    script.write_text(STAND_IN)
    out, err = io.StringIO(), io.StringIO()
    port = _port()
    rc = supervise(
        [sys.executable, str(script), "fail", str(port), "0"],
        {},
        f"http://127.0.0.1:{port}/v1",
        ready_timeout_s=60,
        out=out,
        err=err,
    )
    assert rc == 1 and "exited with code 3 before answering" in err.getvalue()
    assert (
        "  | RuntimeError: no kernel for head_dim=16" in err.getvalue()
        and "ready" not in out.getvalue()
    )


def test_a_server_that_never_answers_is_stopped_after_the_timeout(tmp_path: Path) -> None:
    script = tmp_path / "srv.py"
    script.write_text(STAND_IN)
    err = io.StringIO()
    port = _port()
    t0 = time.monotonic()
    rc = supervise(
        [sys.executable, str(script), "ok", str(port), "60"],
        {},
        f"http://127.0.0.1:{port}/v1",
        ready_timeout_s=2,
        grace_s=2,
        out=io.StringIO(),
        err=err,
    )
    assert rc == 1 and "did not answer" in err.getvalue() and "loading weights" in err.getvalue()
    assert time.monotonic() - t0 < 20


def test_serve_model_prints_ready_and_stops_its_server_tree_on_sigterm(tmp_path: Path) -> None:
    """The CLI end to end with --python pointing at a stand-in 'engine' interpreter."""
    script = tmp_path / "srv.py"
    script.write_text(STAND_IN)
    port = _port()
    fake_python = tmp_path / "python"  # runs the stand-in whatever engine module it is asked for
    fake_python.write_text(f"#!/bin/sh\nexec {sys.executable} {script} ok {port} 0.5\n")
    fake_python.chmod(0o755)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "paravt.cli",
            "serve-model",
            "--model",
            "/m",
            "--port",
            str(port),
            "--gpus",
            "0",
            "--python",
            str(fake_python),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith(
        "$ HF_HUB_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=2 " + str(fake_python) + " -m vllm."
    )
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lines.append(proc.stdout.readline())
        if "ready at" in lines[-1]:
            break
    assert f"ready at http://127.0.0.1:{port}/v1 (model stand-in)" in lines[-1]
    tree = _children(proc.pid)
    assert len(tree) >= 2  # the stand-in server and its worker
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert not any(_alive(p) for p in tree)


def test_torchvision_guard_is_idempotent_and_keeps_the_file_valid(tmp_path: Path) -> None:
    from paravt.servers.vllm_cpu import guard_torchvision

    meta = (
        tmp_path / "lib" / "python3.11" / "site-packages" / "torchvision" / "_meta_registrations.py"
    )
    meta.parent.mkdir(parents=True)
    meta.write_text(
        'import torch\n\n@torch.library.register_fake("torchvision::nms")\ndef meta_nms(d, s, t):\n'
        '    return d\n\n\n@torch.library.register_fake("torchvision::qnms")\ndef meta_qnms(d, '
        "s, t):\n"
        "    return d\n"
    )
    assert guard_torchvision(tmp_path) == [meta] and guard_torchvision(tmp_path) == []
    text = meta.read_text()
    assert text.count("if torchvision.extension._has_ops() else (lambda fn: fn))") == 2
    compile(text, str(meta), "exec")


KEYED_STAND_IN = textwrap.dedent("""
    import http.server, json, os, sys
    key = os.environ.get("VLLM_API_KEY")  # vLLM's own spelling of --api-key
    if not key or key in " ".join(sys.argv):
        print("no key in the environment, or the key on the command line", flush=True)
        sys.exit(3)
    print(f"server args: api_key={key!r}", flush=True)  # as SGLang logs its ServerArgs
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            ok = self.headers.get("Authorization") == "Bearer " + key
            self.send_response(200 if ok else 401)
            self.end_headers()
            self.wfile.write(json.dumps({"data": [{"id": "keyed"}]}).encode())
        def log_message(self, *a):
            pass
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")


def test_serve_model_passes_its_key_to_the_engine_out_of_argv_and_never_prints_it(
    tmp_path: Path,
) -> None:
    """Issue 34 item 7: --api-key-file reaches vLLM as VLLM_API_KEY (not on the command line), the
    readiness poll sends it, and neither the printed command nor any line of the engine's log shows
    it."""
    key = "sk-" + "m" * 40
    (tmp_path / "model.key").write_text(key + "\n")
    script = tmp_path / "srv.py"
    script.write_text(KEYED_STAND_IN)
    port = _port()
    fake_python = tmp_path / "python"
    fake_python.write_text(f"#!/bin/sh\nexec {sys.executable} {script} {port}\n")
    fake_python.chmod(0o755)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "paravt.cli",
            "serve-model",
            "--model",
            "/m",
            "--port",
            str(port),
            "--gpus",
            "0",
            "--python",
            str(fake_python),
            "--api-key-file",
            str(tmp_path / "model.key"),
            "--ready-timeout",
            "60",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert proc.stdout is not None
    lines = [proc.stdout.readline()]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "ready at" not in lines[-1] and proc.poll() is None:
        lines.append(proc.stdout.readline())
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    shown = "".join(lines) + out + err
    assert "ready at" in lines[-1] and "(model keyed)" in lines[-1], shown
    assert f"VLLM_API_KEY=<key of {tmp_path / 'model.key'}>" in lines[0] and key not in shown
    assert "server args: api_key='<api key>'" in shown  # the engine's own log line, masked


def test_serve_model_keys_on_the_engine_side_and_refuses_a_wide_bind_without_one(
    tmp_path: Path,
) -> None:
    keyed = ServeSpec(**{**SPEC.__dict__, "api_key": "sk-" + "n" * 40})
    assert engine_env(keyed)["VLLM_API_KEY"] == keyed.api_key and keyed.api_key not in " ".join(
        engine_args(keyed)
    )
    sglang = ServeSpec(**{**keyed.__dict__, "engine": "sglang"})
    args = engine_args(sglang)
    assert args[args.index("--api-key") + 1] == keyed.api_key and "VLLM_API_KEY" not in engine_env(
        sglang
    )
    assert keyed.api_key not in repr(keyed) and "--api-key" not in engine_args(SPEC)
    res = subprocess.run(
        [sys.executable, "-m", "paravt.cli", "serve-model", "--model", "/m", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    lines = res.stderr.strip().splitlines()
    assert (
        res.returncode == 2
        and len(lines) == 1
        and "beyond loopback" in lines[0]
        and "--api-key-file" in lines[0]
    )
