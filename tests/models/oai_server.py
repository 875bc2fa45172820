"""A small OpenAI-compatible chat server over HFGenerator, for testing OpenAIGenerator against a
real HTTP server. Image parts become ``<image>`` media; ``continue_final_message`` continues a
final assistant message. Knobs for failure tests live on ``ServerState``."""

from __future__ import annotations

import asyncio
import base64
import io
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from PIL import Image

from paravt.models.base import ChatMessage, GenRequest, SamplingParams
from paravt.models.hf import HFGenerator
from paravt.video.types import Frames


@dataclass
class ServerState:
    fail_first: int = 0  # answer the first N completion requests with 503
    delay_s: float = 0.0  # sleep before answering (timeout tests)
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    last_body: dict[str, Any] | None = None


def _frame(url: str) -> Frames:
    raw = base64.b64decode(url.split(",", 1)[1])
    arr = np.asarray(Image.open(io.BytesIO(raw)).convert("RGB"), dtype=np.uint8)
    return Frames(array=arr[None], timestamps=(0.0,))


def _message(m: dict[str, Any]) -> ChatMessage:
    if isinstance(m["content"], str):
        return ChatMessage(m["role"], m["content"])
    text, images = "", []
    for part in m["content"]:
        if part["type"] == "text":
            text += part["text"]
        else:
            images.append(_frame(part["image_url"]["url"]))
            text += "<image>"
    return ChatMessage(m["role"], text, images=tuple(images))


def make_app(gen: HFGenerator, state: ServerState) -> FastAPI:
    app = FastAPI()
    codec = gen.codec

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": "tiny", "object": "model"}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        body = await request.json()
        state.requests += 1
        state.last_body = body
        if state.requests <= state.fail_first:
            return JSONResponse({"error": "overloaded"}, status_code=503)
        state.in_flight += 1
        state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            await asyncio.sleep(state.delay_s)
            return await _complete(body)
        finally:
            state.in_flight -= 1

    async def _complete(body: dict[str, Any]) -> dict[str, Any]:
        msgs = [_message(m) for m in body["messages"]]
        prefix = ""
        if body.get("continue_final_message"):
            prefix = msgs.pop().content
        enc = codec.encode_messages(msgs)
        sampling = SamplingParams(temperature=body.get("temperature", 1.0), top_p=body.get("top_p", 1.0),
                                  max_new_tokens=body.get("max_tokens", 64), seed=body.get("seed"))
        req = GenRequest(prompt_ids=enc.ids + codec.generation_prompt(prefix), messages=tuple(msgs),
                         images=enc.images, sampling=sampling, response_prefix=prefix)
        out = (await gen.generate([req]))[0]
        if out.finish_reason == "error":
            return JSONResponse({"error": out.error}, status_code=500)
        text_ids = [t for t in out.token_ids if t not in codec.stop_token_ids]
        lps = [{"token": codec.decode([t], skip_special_tokens=False), "logprob": lp}
               for t, lp in zip(out.token_ids, out.logprobs) if t not in codec.stop_token_ids]
        return {"id": f"cmpl-{state.requests}", "object": "chat.completion", "created": int(time.time()),
                "model": "tiny", "choices": [{"index": 0, "finish_reason": out.finish_reason,
                "message": {"role": "assistant", "content": codec.decode(text_ids)},
                "logprobs": {"content": lps} if body.get("logprobs") else None}]}

    return app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RunningServer:
    """uvicorn in a background thread on 127.0.0.1:<free port>."""

    def __init__(self, app: FastAPI) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> RunningServer:
        self._thread.start()
        deadline = time.time() + 20
        while not self._server.started:
            if time.time() > deadline:
                raise RuntimeError("test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
