"""Token-exact episodes through a REAL vLLM (the CPU build in .venv-vllm), started by
``paravt serve-model`` for each tiny family: the server's prompt ids equal the trajectory's (an
overview prompt, and every request of a multi-turn parallel episode with sub-agents and a tool
turn), sampled ids and logprobs come from the server, and ``paravt infer`` / ``paravt eval`` work
with a ``/v1`` URL. Run by ``make test-servers`` (``pytest tests/servers --real-servers``)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pandas as pd
import pytest

from paravt.agent import EpisodeInput, EpisodeSettings, run_episode
from paravt.data.synth.build import build
from paravt.http.retry import RetryPolicy
from paravt.models.base import ChatMessage, GenOutput, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_processor
from paravt.models.openai.backend import OpenAIGenerator
from paravt.models.openai.payload import chat_payload
from paravt.protocol import prompts, tags
from paravt.servers.supervise import _alive, _children
from paravt.video import probe, sample_frames

pytestmark = [pytest.mark.real_server, pytest.mark.slow]
ROOT = Path(__file__).parents[2]
SAMPLING = SamplingParams(temperature=1.0, max_new_tokens=24, seed=1)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """``paravt serve-model`` in a subprocess; ``url`` once its ready line is printed."""

    def __init__(self, model_dir: str, python: str) -> None:
        self.dir, self.port = model_dir, _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "paravt.cli",
                "serve-model",
                "--model",
                model_dir,
                "--port",
                str(self.port),
                "--gpus",
                "0",
                "--python",
                python,
                "--ready-timeout",
                "600",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if "paravt serve-model: ready at" in line:
                self.ready.set()

    def wait(self, timeout_s: float = 660.0) -> None:
        if not self.ready.wait(timeout_s):
            self.proc.kill()
            pytest.fail("vLLM never came up:\n" + "".join(self.lines[-40:]))


@pytest.fixture(scope="module", params=["qwen3_vl", "qwen2_5_vl"])
def served(request: pytest.FixtureRequest, tiny_model_dir, vllm_python: str) -> Iterator[Served]:
    # size s: vLLM's CPU attention has no kernel for the xs models' head_dim 16
    srv = Served(tiny_model_dir(request.param, "s"), vllm_python)
    srv.wait()
    assert srv.lines[0].startswith("$ ") and "--trust-request-mm-kwargs" in srv.lines[0]
    tree = _children(srv.proc.pid)
    yield srv
    srv.proc.send_signal(signal.SIGTERM)  # serve-model stops the server it started
    assert srv.proc.wait(timeout=120) == 128 + signal.SIGTERM
    assert not any(_alive(p) for p in tree), "vLLM processes outlived serve-model"


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = Path(tmp_path_factory.mktemp("synth"))
    build(root, videos=1, eval_videos=2, seed=3)
    return root


def _video(synth: Path) -> str:
    return str(sorted((synth / "videos" / "eval").glob("*.mp4"))[0])


def _client(srv: Served, codec: ChatCodec) -> OpenAIGenerator:
    return OpenAIGenerator(
        srv.url, tokenizer=codec.tokenizer, timeout_s=120, retry=RetryPolicy(max_retries=1)
    )


def _overview(codec: ChatCodec, video: str) -> GenRequest:
    info = probe(video)
    frames = sample_frames(
        video, 0.0, info.duration, nframes=16, max_pixels=64 * 64, size_factor=32
    )
    msgs = (
        ChatMessage("system", prompts.system_prompt("parallel", ())),
        ChatMessage("user", "<video>\nWhat colour is the flash?", videos=(frames,)),
    )
    ids = codec.encode_messages(msgs).ids + codec.generation_prompt(tags.THINK_PREFIX)
    return GenRequest(ids, msgs, (frames,), (), SAMPLING, response_prefix=tags.THINK_PREFIX)


def test_overview_prompt_ids_sampled_ids_and_logprobs_come_from_the_server(
    served: Served, synth: Path
) -> None:
    codec = ChatCodec(load_processor(served.dir))
    req = _overview(codec, _video(synth))
    client = _client(served, codec)
    out = asyncio.run(client.generate([req]))[0]
    assert (
        out.error is None
        and out.metrics["prompt_ids_match"] == 1.0
        and out.metrics["server_token_ids"] == 1.0
    )
    assert sum(1 for i in req.prompt_ids if i in codec.vision_token_ids) > 16  # the video is in it
    assert out.metrics["logprobs_from_server"] == 1.0 and all(lp < 0 for lp in out.logprobs)
    assert not set(out.token_ids) & set(
        codec.vision_token_ids
    )  # suppressed, as the hf backend does
    # a turn that ends with the stop token (pushed by a logit bias): its logprob is kept
    body = chat_payload(req, client.model or "", suppress_ids=client.suppress_ids)
    body["logit_bias"][str(codec.im_end_id)] = 6.0
    data = httpx.post(served.url + "/chat/completions", json=body, timeout=120).json()
    stopped = client._parse(data, req, 0.0, 1)
    assert stopped.finish_reason == "stop" and stopped.token_ids[-1] == codec.im_end_id
    assert stopped.logprobs[-1] < 0 and all(lp < 0 for lp in stopped.logprobs)


class ForcedFirstTurn:
    """The main agent's FIRST turn is a fixed crop call (a random tiny model never calls tools);
    every other request — sub-agents and the turn after the tool response — goes to the server.

    A random sub-agent's summary may contain control strings (``</answer>``, ``<|endoftext|>``):
    the episode defuses them once for every backend (``tags.defuse_observation``), so the tool
    turn the server tokenizes is the text ``ChatCodec`` encodes, and the prompts still match."""

    def __init__(self, inner: OpenAIGenerator, codec: ChatCodec, text: str) -> None:
        self.inner, self.codec, self.text, self.forced = inner, codec, text, False

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        if not self.forced and requests[0].response_prefix:
            self.forced = True
            ids = (*self.codec.encode_text(self.text), self.codec.im_end_id)
            return [GenOutput(ids, (0.0,) * len(ids), self.text, "stop")]
        return await self.inner.generate(requests)

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_parallel_episode_with_subagents_and_a_tool_turn_is_token_exact(
    served: Served, synth: Path
) -> None:
    codec = ChatCodec(load_processor(served.dir))
    client = _client(served, codec)
    call = (
        "I need to look closer.\n</think>\n"
        + tags.render_crop_call(0.0, 2.0)
        + tags.render_crop_call(2.0, 4.0)
    )
    gen = ForcedFirstTurn(client, codec, call)
    settings = EpisodeSettings(
        mode="parallel",
        max_turns=1,
        turn_rules="paravt",
        overview_max_pixels=64 * 64,
        crop_max_pixels=64 * 64,
        crop_max_frames=4,
        sampling=SAMPLING,
        sub_sampling=SAMPLING,
    )
    inp = EpisodeInput("e0", _video(synth), "What colour is the flash?", "oe", "red", None, 8)
    t0 = time.perf_counter()
    res = asyncio.run(
        run_episode(inp, generator=gen, codec=codec, settings=settings, episode_id="real")
    )
    took = time.perf_counter() - t0
    assert (
        res.error is None
        and res.n_successful_calls == 2
        and len(res.subs) == 2
        and len(res.main.turns) == 2
    )
    c = client.counters
    assert (
        c.responses == 3 and c.with_token_ids == 3
    )  # two sub-agents + the main turn after the tool turn
    assert c.prompt_checked == 3 and c.prompt_mismatch == 0, c
    sampled = [lp for t in res.subs for lp, m in zip(t.logprobs, t.loss_mask) if m]
    last = res.main.turns[-1].n_generated_tokens  # the second main turn, sampled by vLLM
    main_sampled = [lp for lp, m in zip(res.main.logprobs, res.main.loss_mask) if m][-last:]
    assert (
        len(sampled) > 0
        and all(lp < 0 for lp in sampled)
        and last > 0
        and all(lp < 0 for lp in main_sampled)
    )
    print(f"\n[{Path(served.dir).name}] parallel episode through vLLM: {took:.2f} s, counters {c}")


def test_infer_and_eval_take_a_v1_url(served: Served, synth: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cli = [sys.executable, "-m", "paravt.cli"]
    infer = subprocess.run(
        [
            *cli,
            "infer",
            "--model",
            served.url,
            "--processor",
            served.dir,
            "--video",
            _video(synth),
            "--question",
            "What colour is the flash?",
            "--max-new-tokens",
            "24",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert infer.returncode == 0, infer.stderr[-2000:]
    episode = json.loads(infer.stdout)
    assert episode["error"] is None and episode["tokens"]["generated"] > 0 and episode["turns"]
    ev = subprocess.run(
        [
            *cli,
            "eval",
            "--model",
            served.url + "/",
            "--processor",
            served.dir,
            "--data",
            str(synth / "eval.parquet"),
            "--mode",
            "parallel",
            "--limit",
            "2",
            "--nframes",
            "8",
            "--max-new-tokens",
            "24",
            "--out",
            str(tmp_path / "ev"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert ev.returncode == 0, ev.stderr[-2000:]
    metrics = json.loads((tmp_path / "ev" / "metrics.json").read_text())
    server = metrics["server"]
    assert server["responses"] >= 2 and server["with_token_ids"] == server["responses"]
    assert server["prompt_checked"] == server["responses"] and server["prompt_mismatch"] == 0


def test_distill_talks_to_a_served_teacher(served: Served, synth: Path, tmp_path: Path) -> None:
    """`paravt data distill` against a real vLLM teacher (issue 16): requests with frames reach the
    server and come back, every row ends (accepted or rejected with a reason; a random tiny
    teacher writes no valid trace, so the run accepts none and exits 2), no teacher errors, tokens
    counted."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "distilled"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "paravt.cli",
            "data",
            "distill",
            "--data",
            str(synth / "rl.parquet"),
            "--root",
            str(synth),
            "--teacher",
            served.url,
            "--teacher-model",
            served.dir,
            "--limit",
            "2",
            "--workers",
            "2",
            "--out",
            str(out),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    # a random tiny teacher rarely writes a valid trace, but an untagged last line that shares a
    # word with an open-ended gold scores > 0 (it did once the tokenizer corpus named colours): 0
    # accepted is exit 2 with one line and no sft.parquet (issue 48 item 6; its own test in
    # tests/distill/test_zero_accepted.py), any accepted row is exit 0 and a row of sft.parquet
    assert (out / "report.json").exists(), proc.stderr[-2000:]
    report = json.loads((out / "report.json").read_text())
    if report["accepted"] == 0:
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert "0 of 2 rows accepted" in proc.stderr and not (out / "sft.parquet").exists()
    else:
        assert proc.returncode == 0, proc.stderr[-2000:]
        written = sum(report["rows_written"].values())
        assert len(pd.read_parquet(out / "sft.parquet")) == written >= 1
    assert report["requested"] == 2 and report["finished"] == 2 and report["errored"] == 0
    assert report["teacher_errors"] == {"primary": 0, "fallback": 0}
    assert (
        report["requests"] >= 2
        and report["tokens"]["prompt"] > 0
        and report["tokens"]["completion"] > 0
    )
    assert report["accepted"] + sum(report["rejected"].values()) == 2
