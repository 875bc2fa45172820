"""A small OpenAI-compatible chat server over HFGenerator that answers like vLLM, for testing
OpenAIGenerator against a real HTTP server.

Like vLLM: a ``video_url`` part holding ``data:video/jpeg;base64,<f1>,<f2>,…`` is one video whose
frame times come from the request's ``media_io_kwargs["video"]`` (``frames_indices / fps``; frame i
at i / fps without them); an ``image_url`` part is one image; ``continue_final_message`` continues a
final assistant message; with ``return_token_ids`` the answer carries ``prompt_token_ids`` (the
prompt the server encoded) and the choice's sampled ``token_ids`` (stop token included), and the
logprob entries include the stop token. Knobs for failure and compatibility tests live on
``ServerState``."""

from __future__ import annotations

import asyncio
import base64
import io
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from PIL import Image

from live_server import RunningServer, free_port  # noqa: F401 - re-exported to the tests
from paravt.models.base import ChatMessage, GenRequest, SamplingParams
from paravt.models.hf.generator import HFGenerator
from paravt.video.types import Frames


@dataclass
class ServerState:
    fail_first: int = 0  # answer the first N completion requests with 503
    delay_s: float = 0.0  # sleep before answering (timeout tests)
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    last_body: dict[str, Any] | None = None
    token_ids: bool = True  # honour return_token_ids (False: a server that returns text only)
    status: int | None = None  # answer every completion request with this HTTP status
    reply: Any = None  # answer every completion request with this JSON body
    strict: bool = False  # reject vLLM's extra fields with a 400, like a strict OpenAI server


def _pixels(b64: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(b64))).convert("RGB"), dtype=np.uint8)


def _video(url: str, kw: dict[str, Any]) -> Frames:
    head, data = url.split(",", 1)
    assert head == "data:video/jpeg;base64", head
    arr = np.stack([_pixels(b) for b in data.split(",")])
    fps = float(kw.get("fps", 1.0))
    indices = kw.get("frames_indices") or list(range(len(arr)))
    return Frames(array=arr, timestamps=tuple(i / fps for i in indices))


def _message(m: dict[str, Any], video_kw: dict[str, Any]) -> ChatMessage:
    if isinstance(m["content"], str):
        return ChatMessage(m["role"], m["content"])
    text, images, videos = "", [], []
    for part in m["content"]:
        if part["type"] == "text":
            text += part["text"]
        elif part["type"] == "video_url":
            videos.append(_video(part["video_url"]["url"], video_kw))
            text += "<video>"
        else:
            images.append(
                Frames(
                    array=_pixels(part["image_url"]["url"].split(",", 1)[1])[None],
                    timestamps=(0.0,),
                )
            )
            text += "<image>"
    return ChatMessage(m["role"], text, videos=tuple(videos), images=tuple(images))


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
        if state.status is not None:
            return JSONResponse({"error": "told to fail"}, status_code=state.status)
        if state.reply is not None:
            return state.reply
        extra = [k for k in ("return_token_ids", "top_k", "media_io_kwargs") if k in body]
        if state.strict and extra:
            return JSONResponse(
                {"error": f"Unrecognized request argument supplied: {extra[0]}"}, status_code=400
            )
        state.in_flight += 1
        state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            await asyncio.sleep(state.delay_s)
            return await _complete(body)
        finally:
            state.in_flight -= 1

    async def _complete(body: dict[str, Any]) -> Any:
        video_kw = (body.get("media_io_kwargs") or {}).get("video") or {}
        msgs = [_message(m, video_kw) for m in body["messages"]]
        prefix = ""
        if body.get("continue_final_message"):
            prefix = msgs.pop().content
        enc = codec.encode_messages(msgs)
        sampling = SamplingParams(
            temperature=body.get("temperature", 1.0),
            top_p=body.get("top_p", 1.0),
            max_new_tokens=body.get("max_tokens", 64),
            seed=body.get("seed"),
        )
        prompt = enc.ids + codec.generation_prompt(prefix)
        req = GenRequest(
            prompt_ids=prompt,
            messages=tuple(msgs),
            videos=enc.videos,
            images=enc.images,
            sampling=sampling,
            response_prefix=prefix,
        )
        out = (await gen.generate([req]))[0]
        if out.finish_reason == "error":
            return JSONResponse({"error": out.error}, status_code=500)
        lps = [
            {"token": codec.decode([t], skip_special_tokens=False), "logprob": lp}
            for t, lp in zip(out.token_ids, out.logprobs)
        ]
        choice: dict[str, Any] = {
            "index": 0,
            "finish_reason": out.finish_reason,
            "message": {"role": "assistant", "content": codec.decode(out.token_ids)},
            "logprobs": {"content": lps} if body.get("logprobs") else None,
        }
        answer: dict[str, Any] = {
            "id": f"cmpl-{state.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "tiny",
            "choices": [choice],
        }
        if body.get("return_token_ids") and state.token_ids:
            choice["token_ids"] = list(out.token_ids)
            answer["prompt_token_ids"] = list(prompt)
        return answer

    return app
