"""The teacher client against a real local server: back-off on 429/5xx, errors as results,
refusals, frames as timestamped images, the API key from a file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from scripted_teacher import RunningServer

from paravt.data.distill.teacher import Endpoint, TeacherClient, content, is_refusal, read_api_key
from paravt.errors import ConfigError
from paravt.video.types import Frames


def _app(statuses: list[int], seen: list[dict]) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        seen.append({"auth": request.headers.get("authorization"), "body": await request.json()})
        code = statuses.pop(0) if statuses else 200
        if code != 200:
            return JSONResponse({"error": "x"}, status_code=code)
        return JSONResponse({"choices": [{"message": {"content": "<answer>B</answer>"}, "finish_reason": "stop"}],
                             "usage": {"prompt_tokens": 7, "completion_tokens": 3}})

    return app


def test_retries_429_and_5xx_then_answers_with_the_key_and_usage() -> None:
    seen: list[dict] = []
    with RunningServer(_app([429, 503], seen)) as srv:
        client = TeacherClient(Endpoint(srv.url + "/v1", "m", "sk-test"), backoff_s=0.01, max_retries=3)
        reply = asyncio.run(_once(client))
    assert reply.ok and reply.text == "<answer>B</answer>" and reply.retries == 2
    assert (reply.prompt_tokens, reply.completion_tokens) == (7, 3)
    assert len(seen) == 3 and seen[0]["auth"] == "Bearer sk-test" and seen[0]["body"]["model"] == "m"


def test_a_client_error_or_exhausted_retries_is_an_error_result() -> None:
    with RunningServer(_app([400], [])) as srv:
        bad = asyncio.run(_once(TeacherClient(Endpoint(srv.url, "m"), backoff_s=0.01)))
    assert bad.error is not None and bad.error.startswith("HTTP 400") and not bad.ok
    with RunningServer(_app([500, 500, 500], [])) as srv:
        tired = asyncio.run(_once(TeacherClient(Endpoint(srv.url, "m"), backoff_s=0.01, max_retries=2)))
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
    assert parts[1]["text"] == "<1.5 seconds>" and parts[2]["image_url"]["url"].startswith("data:image/jpeg;base64,")
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
