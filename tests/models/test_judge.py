"""The LLM judge against real HTTP servers on 127.0.0.1 (FastAPI + uvicorn in a thread, and a raw
socket server for the hostile ones)."""

import asyncio
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from paravt.models.openai.judge import JudgeItem, LLMJudge, parse_judge_reply
from raw_http import DECLARED_HUGE, RawServer, drip, endless_chunks


@dataclass
class State:
    delay_s: float = 0.0
    fail_first: int = 0
    requests: int = 0


def make_app(state: State) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(body: dict) -> JSONResponse:
        state.requests += 1
        if state.requests <= state.fail_first:
            return JSONResponse({"error": "busy"}, status_code=503)
        await asyncio.sleep(state.delay_s)
        text = body["messages"][-1]["content"]
        ref = re.search(r"Reference: (.*)\n", text).group(1).lower()
        pred = re.search(r"Prediction: (.*)", text).group(1).lower()
        # a toy judge: exact -> 1, shares a word -> 0.5, else 0; "???" -> an unreadable reply
        score = (
            "???"
            if pred == "???"
            else "1"
            if pred == ref
            else "0.5"
            if set(pred.split()) & set(ref.split())
            else "0"
        )
        return JSONResponse(
            {"choices": [{"message": {"role": "assistant", "content": f"Score: {score}"}}]}
        )

    return app


@pytest.fixture()
def server() -> Iterator[tuple[str, State]]:
    state = State()
    srv = uvicorn.Server(
        uvicorn.Config(make_app(state), host="127.0.0.1", port=0, log_level="error")
    )
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.02)
    port = srv.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/v1", state
    srv.should_exit = True
    thread.join(timeout=5)


def run(url: str, items: list[JudgeItem], **kw):
    async def go():
        async with LLMJudge(url, **kw) as judge:
            return await judge.score(items)

    return asyncio.run(go())


ITEMS = [
    JudgeItem("What flashed?", "red cat", "red cat"),
    JudgeItem("What flashed?", "red cat", "a red dog"),
    JudgeItem("What flashed?", "red cat", "blue"),
    JudgeItem("What flashed?", "red cat", None),
]


def test_judge_scores_in_halves_and_skips_empty_predictions(server) -> None:
    url, state = server
    res = run(url, ITEMS)
    assert res.scores == (1.0, 0.5, 0.0, 0.0)
    assert (res.stats.n, res.stats.n_judged, res.stats.n_fallback, res.stats.n_empty) == (
        4,
        3,
        0,
        1,
    )
    assert state.requests == 3


def test_judge_takes_the_server_url_with_or_without_v1(server) -> None:
    url, state = server
    res = run(url.removesuffix("/v1") + "/", ITEMS[:1])  # the openai backend's convention too
    assert res.scores == (1.0,) and res.stats.n_judged == 1


def test_5xx_is_retried_then_judged(server) -> None:
    url, state = server
    state.fail_first = 1
    res = run(url, ITEMS[:1], backoff_s=0.01)
    assert res.scores == (1.0,) and res.stats.n_retries == 1 and res.stats.n_fallback == 0


def test_timeout_falls_back_to_f1_and_is_counted(server) -> None:
    url, state = server
    state.delay_s = 1.0
    res = run(url, ITEMS[1:2], timeout_s=0.2, max_retries=1, backoff_s=0.01)
    # token F1("a red dog", "red cat"): tokens {red, dog} vs {red, cat}: P = R = 1/2 -> 0.5
    assert res.scores == (0.5,) and res.stats.n_fallback == 1 and res.stats.n_retries == 1


def test_unreadable_reply_falls_back_without_retry(server) -> None:
    url, state = server
    res = run(url, [JudgeItem("q", "red cat", "???")])
    assert res.scores == (0.0,) and res.stats.n_fallback == 1 and state.requests == 1


def test_parse_judge_reply() -> None:
    assert [parse_judge_reply(t) for t in ["1", "Score: 0.5", "0", "1.0.", "10", "maybe"]] == [
        1.0,
        0.5,
        0.0,
        1.0,
        None,
        None,
    ]


def test_a_server_dripping_one_byte_at_a_time_is_cut_at_the_whole_request_deadline() -> None:
    # every byte comes well within httpx's per-read timeout; only a deadline on the whole request
    # ends it
    with RawServer(drip(0.3)) as srv:
        t0 = time.monotonic()
        res = run(srv.url + "/v1", ITEMS[1:2], timeout_s=1.0, max_retries=1, backoff_s=0.01)
        took = time.monotonic() - t0
    assert (
        res.scores == (0.5,) and res.stats.n_fallback == 1 and res.stats.n_retries == 1
    )  # F1, after 2 attempts
    assert 2 * 1.0 <= took < 2 * 1.0 + 1.5, took  # each attempt cut at 1 s (the body needs 300 s)
    assert srv.connections == 2


@pytest.mark.parametrize(
    "respond", [endless_chunks(65536), DECLARED_HUGE], ids=["streamed", "declared"]
)
def test_a_reply_over_the_size_cap_falls_back_to_f1_without_retry(respond) -> None:  # noqa: ANN001
    with RawServer(respond) as srv:
        t0 = time.monotonic()
        res = run(
            srv.url + "/v1", ITEMS[1:2], timeout_s=30.0, max_retries=2, max_reply_bytes=1 << 20
        )
        took = time.monotonic() - t0
    assert res.scores == (0.5,) and res.stats.n_fallback == 1 and res.stats.n_retries == 0
    assert srv.connections == 1 and took < 10, took
