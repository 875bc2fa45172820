"""The teacher client against a real local server: back-off on 429/5xx, errors as results,
refusals, frames as timestamped images, the API key from a file; and its bounds against hostile
servers on loopback (issue 28): a whole-request deadline, a reply size cap, malformed usage."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from scripted_teacher import RunningServer

from paravt.distill.teacher import Endpoint, TeacherClient, content, is_refusal, read_api_key
from paravt.errors import ConfigError
from paravt.video.types import Frames
from raw_http import RawServer, drip, endless_chunks, fixed


def _app(statuses: list[int], seen: list[dict]) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        seen.append({"auth": request.headers.get("authorization"), "body": await request.json()})
        code = statuses.pop(0) if statuses else 200
        if code != 200:
            return JSONResponse({"error": "x"}, status_code=code)
        return JSONResponse(
            {
                "choices": [
                    {"message": {"content": "<answer>B</answer>"}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3},
            }
        )

    return app


def test_retries_429_and_5xx_then_answers_with_the_key_and_usage() -> None:
    seen: list[dict] = []
    with RunningServer(_app([429, 503], seen)) as srv:
        client = TeacherClient(
            Endpoint(srv.url + "/v1", "m", "sk-test"), backoff_s=0.01, max_retries=3
        )
        reply = asyncio.run(_once(client))
    assert reply.ok and reply.text == "<answer>B</answer>" and reply.retries == 2
    assert (reply.prompt_tokens, reply.completion_tokens) == (7, 3)
    assert (
        len(seen) == 3 and seen[0]["auth"] == "Bearer sk-test" and seen[0]["body"]["model"] == "m"
    )


def test_a_client_error_or_exhausted_retries_is_an_error_result() -> None:
    with RunningServer(_app([400], [])) as srv:
        bad = asyncio.run(_once(TeacherClient(Endpoint(srv.url, "m"), backoff_s=0.01)))
    assert bad.error is not None and bad.error.startswith("HTTP 400") and not bad.ok
    with RunningServer(_app([500, 500, 500], [])) as srv:
        tired = asyncio.run(
            _once(TeacherClient(Endpoint(srv.url, "m"), backoff_s=0.01, max_retries=2))
        )
    assert tired.error is not None and "after 3 attempts" in tired.error


async def _once(client: TeacherClient):  # noqa: ANN202
    try:
        return await client.chat([{"role": "user", "content": "q"}])
    finally:
        await client.aclose()


def test_refusals() -> None:
    assert is_refusal("I'm sorry, but I can't help with that.")
    assert is_refusal("anything", "content_filter")
    assert not is_refusal("<think>Sorry, I misread.</think><answer>B</answer>")
    assert not is_refusal("The cup is red.")


def test_frames_become_timestamped_images_in_place_of_the_marker() -> None:
    frames = Frames(np.zeros((2, 32, 32, 3), np.uint8), (1.5, 3.0))
    parts = content("Look:\n<video>\nWhat is it?", (frames,))
    kinds = [p["type"] for p in parts]
    assert kinds == ["text", "text", "image_url", "text", "image_url", "text"]
    assert parts[1]["text"] == "<1.5 seconds>" and parts[2]["image_url"]["url"].startswith(
        "data:image/jpeg;base64,"
    )
    assert content("no media") == "no media"


def test_api_key_from_option_or_file_never_both(tmp_path: Path) -> None:
    f = tmp_path / "key"
    f.write_text("sk-file\n")
    assert read_api_key(None, str(f)) == "sk-file" and read_api_key("sk-opt", None) == "sk-opt"
    assert read_api_key(None, None) is None
    with pytest.raises(ConfigError):
        read_api_key("a", str(f))
    with pytest.raises(ConfigError):
        read_api_key(None, str(tmp_path / "missing"))


def test_a_server_dripping_one_byte_at_a_time_is_cut_at_the_whole_request_deadline() -> None:
    # every byte comes well within any per-read timeout; only a deadline on the whole request ends
    # it
    with RawServer(drip(0.25)) as srv:
        t0 = time.monotonic()
        reply = asyncio.run(
            _once(
                TeacherClient(Endpoint(srv.url, "m"), timeout_s=1.5, max_retries=1, backoff_s=0.01)
            )
        )
        took = time.monotonic() - t0
    assert (
        reply.error is not None
        and "timeout_s=1.5 s" in reply.error
        and "after 2 attempts" in reply.error
    )
    assert 2 * 1.5 <= took < 2 * 1.5 + 2.0, (
        took
    )  # two attempts, each cut at 1.5 s (the body needs 250 s)
    assert srv.connections == 2


def _big_app(n_bytes: int) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat() -> JSONResponse:
        return JSONResponse(
            {"choices": [{"message": {"content": "x" * n_bytes}, "finish_reason": "stop"}]}
        )

    return app


def test_a_reply_over_the_size_cap_is_an_error_result_not_retried() -> None:
    with RunningServer(_big_app(3 << 20)) as srv:  # 3 MB, announced by Content-Length
        big = asyncio.run(_once(TeacherClient(Endpoint(srv.url, "m"), max_reply_bytes=1 << 20)))
        fits = asyncio.run(_once(TeacherClient(Endpoint(srv.url, "m"), max_reply_bytes=4 << 20)))
    assert (
        big.error is not None
        and "reply too large from" in big.error
        and "(declared" in big.error
        and "max_reply_bytes=1048576" in big.error
    )
    assert big.retries == 0 and not big.ok and big.text == ""
    assert fits.ok and len(fits.text) == 3 << 20
    with RawServer(endless_chunks(64 << 10)) as srv:  # no length given: cut while it streams
        t0 = time.monotonic()
        endless = asyncio.run(
            _once(TeacherClient(Endpoint(srv.url, "m"), timeout_s=30, max_reply_bytes=1 << 20))
        )
        assert time.monotonic() - t0 < 10
    assert (
        endless.error is not None
        and "reply too large from" in endless.error
        and "(over" in endless.error
    )


def _usage_app(usages: list[object]) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat() -> JSONResponse:
        return JSONResponse(
            {
                "choices": [
                    {"message": {"content": "<answer>B</answer>"}, "finish_reason": "stop"}
                ],
                "usage": usages.pop(0),
            }
        )

    return app


BAD_USAGE = [
    {"prompt_tokens": "abc"},
    {"prompt_tokens": 3, "completion_tokens": 1.5},
    {"completion_tokens": -1},
    {"prompt_tokens": True},
    ["x"],
    "abc",
]
GOOD_USAGE = [
    (None, (0, 0)),
    ({}, (0, 0)),
    ({"prompt_tokens": 5.0, "completion_tokens": None}, (5, 0)),
]


def test_malformed_usage_is_an_error_result_never_an_exception_and_whole_numbers_count() -> None:
    usages = [*BAD_USAGE, *(u for u, _ in GOOD_USAGE)]
    with RunningServer(_usage_app(usages)) as srv:
        client = TeacherClient(Endpoint(srv.url, "m"), max_retries=0)
        replies = [asyncio.run(_once(client)) for _ in range(len(BAD_USAGE) + len(GOOD_USAGE))]
    for usage, reply in zip(BAD_USAGE, replies):
        assert reply.error is not None and reply.error.startswith(
            "malformed chat completion: usage"
        ), usage
        assert not reply.ok and reply.retries == 0
    for (usage, counts), reply in zip(GOOD_USAGE, replies[len(BAD_USAGE) :]):
        assert reply.ok and (reply.prompt_tokens, reply.completion_tokens) == counts, usage


def test_a_body_that_does_not_decode_is_an_error_result_never_an_exception() -> None:
    """A 200 reply that says ``Content-Encoding: gzip`` over a body that is not gzip: httpx raises
    ``DecodingError`` (not a transport error) while the body streams; the client returns it."""
    body = b'{"choices": []}'
    raw = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
    )
    with RawServer(fixed(raw)) as srv:
        reply = asyncio.run(
            _once(TeacherClient(Endpoint(srv.url, "m"), max_retries=2, backoff_s=0.01))
        )
    assert reply.error is not None and "DecodingError" in reply.error and not reply.ok
    assert (
        reply.retries == 0 and srv.connections == 1
    )  # a server that sends this would send it again
