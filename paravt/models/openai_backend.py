"""OpenAIGenerator: ``Generator`` over an OpenAI-compatible ``/v1/chat/completions`` server
(vLLM, SGLang) — the chat backend: it reads ``GenRequest.messages``, not ``prompt_ids``.

Choices (documented because they change what the server sees):
- Media: frames are sent as base64 data URLs (JPEG, quality 95; PNG with ``image_format="png"``).
  A video becomes, per frame, a text part ``"<{t:.1f} seconds>"`` (the frame's real timestamp)
  followed by an ``image_url`` part: every server accepts images, not every server accepts
  videos as frame lists, and the timestamps keep the temporal information. An image is one
  ``image_url`` part.
- A ``tool`` message is sent with role ``tool`` (the server's chat template wraps it in
  ``<tool_response>``).
- A forced ``response_prefix`` (e.g. ``"<think>\\n"``) is sent as a final assistant message with
  vLLM's extra body ``{"continue_final_message": true, "add_generation_prompt": false}``: the
  server continues it, and the returned text is the continuation only.
- Tokens: the returned text is re-tokenised with the LOCAL tokenizer (it must be the served
  model's); on ``stop`` the stop token ``<|im_end|>`` is appended as the last sampled id.
  Logprobs come from the server (``logprobs: true``) when it returns exactly one per
  re-tokenised text token; otherwise (absent or differently tokenised) they are all 0.0 and
  ``metrics["logprobs_from_server"] == 0``. The stop token's logprob is 0.0.
- Reliability: at most ``max_concurrency`` requests in flight (semaphore); each attempt has
  ``timeout_s``; timeouts, transport errors, 429 and 5xx are retried ``max_retries`` times with
  exponential back-off (``backoff_s * 2**attempt``); anything else, or the last failure,
  becomes a ``finish_reason="error"`` output.
"""

from __future__ import annotations

import asyncio
import base64
import io
import re
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import httpx
import numpy as np
from PIL import Image

from paravt.models.base import ChatMessage, GenOutput, GenRequest
from paravt.models.hf import error_output
from paravt.protocol.tags import IM_END, defuse_control_text
from paravt.video.types import Frames

_MARKER_RE = re.compile(r"(<video>|<image>)")
_RETRY_STATUS = {429, 500, 502, 503, 504}


def data_url(pixels: np.ndarray, image_format: str = "jpeg") -> str:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format=image_format.upper(), **({"quality": 95} if image_format == "jpeg" else {}))
    return f"data:image/{image_format};base64," + base64.b64encode(buf.getvalue()).decode()


def message_parts(msg: ChatMessage, image_format: str = "jpeg") -> list[dict[str, Any]]:
    """OpenAI content parts of one message (see the module docstring for the video layout)."""
    videos, images = iter(msg.videos), iter(msg.images)
    parts: list[dict[str, Any]] = []
    for piece in _MARKER_RE.split(msg.content):
        if piece == "<video>":
            video: Frames = next(videos)
            for t, frame in zip(video.timestamps, video.array):
                parts.append({"type": "text", "text": f"<{t:.1f} seconds>"})
                parts.append({"type": "image_url", "image_url": {"url": data_url(frame, image_format)}})
        elif piece == "<image>":
            parts.append({"type": "image_url", "image_url": {"url": data_url(next(images).array[0], image_format)}})
        elif piece:
            parts.append({"type": "text", "text": piece})
    return parts


def chat_payload(req: GenRequest, model: str, image_format: str = "jpeg") -> dict[str, Any]:
    """The ``/v1/chat/completions`` body of one request."""
    messages: list[dict[str, Any]] = []
    for i, m in enumerate(req.messages):
        if m.role == "tool":  # tool output is data: the server must not read control tokens in it
            m = replace(m, content=defuse_control_text(m.content))
        content: Any = m.content if not (m.videos or m.images) else message_parts(m, image_format)
        entry: dict[str, Any] = {"role": m.role, "content": content}
        if m.role == "tool":
            entry["tool_call_id"] = f"call_{i}"
        messages.append(entry)
    s = req.sampling
    body: dict[str, Any] = {
        "model": model, "messages": messages, "temperature": s.temperature, "top_p": s.top_p,
        "max_tokens": s.max_new_tokens, "logprobs": True, "stream": False,
    }
    if s.seed is not None:
        body["seed"] = s.seed
    if req.response_prefix:
        messages.append({"role": "assistant", "content": req.response_prefix})
        body.update(continue_final_message=True, add_generation_prompt=False)
    return body


class OpenAIGenerator:
    """Generator over an OpenAI-compatible chat server (see the module docstring)."""

    def __init__(self, base_url: str, *, model: str | None = None, timeout_s: float = 120.0,
                 max_retries: int = 3, max_concurrency: int = 16, tokenizer: Any,
                 backoff_s: float = 0.5, image_format: str = "jpeg") -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.image_format = image_format
        self.tokenizer = tokenizer
        self.im_end_id: int = tokenizer.convert_tokens_to_ids(IM_END)
        self.max_concurrency = max_concurrency
        # the client and the semaphore belong to one event loop; rebuilt when called from another
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sem = asyncio.Semaphore(max_concurrency)
        self._client: httpx.AsyncClient | None = None

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._sem = asyncio.Semaphore(self.max_concurrency)
            self._client = httpx.AsyncClient(base_url=self.base_url, timeout=self.timeout_s)

    def _http(self) -> httpx.AsyncClient:
        assert self._client is not None
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.aclose()
        self._client, self._loop = None, None

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        self._bind_loop()
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def _model_name(self) -> str:
        if self.model is None:
            resp = await self._http().get("/v1/models")
            resp.raise_for_status()
            self.model = str(resp.json()["data"][0]["id"])
        return self.model

    async def _one(self, req: GenRequest) -> GenOutput:
        t0 = time.perf_counter()
        async with self._sem:
            last = "no attempt made"
            for attempt in range(self.max_retries + 1):
                if attempt:
                    await asyncio.sleep(self.backoff_s * 2 ** (attempt - 1))
                try:
                    body = chat_payload(req, await self._model_name(), self.image_format)
                    resp = await self._http().post("/v1/chat/completions", json=body)
                except (httpx.TimeoutException, httpx.TransportError) as err:
                    last = f"{type(err).__name__}: {err or 'timed out'}"
                    continue
                if resp.status_code in _RETRY_STATUS:
                    last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                    continue
                if resp.status_code != 200:
                    return error_output(f"HTTP {resp.status_code}: {resp.text[:500]}", time.perf_counter() - t0)
                return self._parse(resp.json(), time.perf_counter() - t0, attempt + 1)
        return error_output(f"failed after {self.max_retries + 1} attempts: {last}", time.perf_counter() - t0)

    def _parse(self, data: dict[str, Any], latency: float, attempts: int) -> GenOutput:
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"] or ""
            reason = choice.get("finish_reason")
        except (KeyError, IndexError, TypeError) as err:
            return error_output(f"malformed chat completion response ({err!r}): {str(data)[:300]}", latency)
        text = text.split(IM_END)[0]
        ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        server = [float(x["logprob"]) for x in ((choice.get("logprobs") or {}).get("content") or [])]
        from_server = len(server) == len(ids) and len(ids) > 0
        lps = server if from_server else [0.0] * len(ids)
        finish = "stop" if reason == "stop" else "length"
        if finish == "stop":
            ids.append(self.im_end_id)
            lps.append(0.0)
        return GenOutput(token_ids=tuple(ids), logprobs=tuple(lps), text=text, finish_reason=finish,
                         metrics={"latency_s": latency, "attempts": float(attempts),
                                  "logprobs_from_server": float(from_server)})
