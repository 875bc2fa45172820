"""A small client for a teacher: any OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM,
SGLang, a hosted API). Own module on purpose: the policy backend (`paravt.models.openai.backend`)
is token-exact and needs the served model's tokenizer; a teacher only needs text back.

Media are sent the way the policy's OpenAI backend sends them: per frame, a text part
``"<{t:.1f} seconds>"`` with the frame's real timestamp, then an ``image_url`` part holding a JPEG
data URL (every server accepts images; not every server accepts frame lists as a video).

Reliability: the ONE policy of the OpenAI-compatible clients (``paravt.http.retry``): each
attempt has a WHOLE-request deadline of ``timeout_s`` (connect, headers and the body together: a
server that drips one byte a second is cut at ``timeout_s``, not kept alive by every byte);
timeouts, transport errors, 408, 429 and 5xx are retried ``max_retries`` times after
``backoff_s * 2**retry`` or the server's ``Retry-After`` when longer (at most 60 s a wait), so one
``chat`` lasts at most ``(max_retries + 1) * timeout_s`` plus the waits. A reply body over
``max_reply_bytes`` is cut off while it streams and is an error at once (not retried), as is a
malformed reply (no choices, non-numeric ``usage``) or an unreadable one (a body that does not
decode); anything else, or the last failure, is a `TeacherReply` with ``error`` set (never an
exception). A refusal (finish reason ``content_filter`` or a reply that opens with an
apology and holds no protocol tag) is ``refused=True``.
"""

from __future__ import annotations

import base64
import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from PIL import Image

from paravt.errors import ConfigError
from paravt.http.bounded import Reply
from paravt.http.retry import RetryPolicy, send
from paravt.http.urls import api_base
from paravt.video.types import Frames

Part = dict[str, Any]
ChatMsg = dict[str, Any]

_REFUSAL_RE = re.compile(
    r"^\W*(i'?m sorry|i am sorry|sorry,|i can(?:no|')t (?:help|assist|comply|provide|answer)|"
    r"i cannot (?:help|assist|comply|provide|answer)|i(?: am|'m) (?:unable|not able) to|as an ai)",
    re.I,
)
_TAG_RE = re.compile(r"<(?:think|tool_call|tool_code|answer)>")


@dataclass(frozen=True)
class Endpoint:
    """Where a teacher lives. ``url`` is the server root or its ``/v1`` URL."""

    url: str
    model: str
    api_key: str | None = None

    @property
    def chat_url(self) -> str:
        return (
            api_base(self.url) + "/chat/completions"
        )  # the backend's and the judge's URL convention


@dataclass(frozen=True)
class TeacherReply:
    text: str
    error: str | None = None  # the request failed (after retries)
    refused: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0  # attempts beyond the first (429 / 5xx / timeouts)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.refused


def read_api_key(value: str | None, file: str | None) -> str | None:
    """The API key from an option or from a file (first line); never from code or the env."""
    if value and file:
        raise ConfigError("give the API key either with --api-key or with --api-key-file, not both")
    if file:
        p = Path(file)
        if not p.is_file():
            raise ConfigError(f"API key file {p} does not exist; write the key on its first line")
        lines = p.read_text().strip().splitlines()
        return lines[0].strip() if lines else None
    return value or None


def is_refusal(text: str, finish_reason: str | None = None) -> bool:
    if finish_reason == "content_filter":
        return True
    return bool(_REFUSAL_RE.match(text or "")) and not _TAG_RE.search(text or "")


def data_url(pixels: np.ndarray) -> str:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="JPEG", quality=95)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def frame_parts(frames: Frames) -> list[Part]:
    parts: list[Part] = []
    for t, frame in zip(frames.timestamps, frames.array):
        parts.append({"type": "text", "text": f"<{t:.1f} seconds>"})
        parts.append({"type": "image_url", "image_url": {"url": data_url(frame)}})
    return parts


def content(text: str, videos: Sequence[Frames] = ()) -> str | list[Part]:
    """Message content: ``text`` with each ``<video>`` marker replaced by the next clip's frames
    (plain string when there are no clips)."""
    if not videos:
        return text
    pieces = text.split("<video>")
    if len(pieces) - 1 != len(videos):
        raise ValueError(f"{len(pieces) - 1} <video> markers for {len(videos)} clips")
    parts: list[Part] = []
    for i, piece in enumerate(pieces):
        if piece:
            parts.append({"type": "text", "text": piece})
        if i < len(videos):
            parts.extend(frame_parts(videos[i]))
    return parts


class TeacherClient:
    """One endpoint; safe to share between concurrent rows (one httpx client per event loop)."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_s: float = 1.0,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        max_reply_bytes: int = 4 << 20,
    ) -> None:
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self.retry = RetryPolicy(max_retries=max_retries, backoff_s=backoff_s)
        self.temperature, self.max_tokens = temperature, max_tokens
        self.max_reply_bytes = max_reply_bytes
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            headers = (
                {"Authorization": f"Bearer {self.endpoint.api_key}"}
                if self.endpoint.api_key
                else {}
            )
            self._client = httpx.AsyncClient(timeout=self.timeout_s, headers=headers)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def chat(
        self, messages: Sequence[ChatMsg], *, max_tokens: int | None = None
    ) -> TeacherReply:
        body = {
            "model": self.endpoint.model,
            "messages": list(messages),
            "temperature": self.temperature,
            "max_tokens": max_tokens or self.max_tokens,
            "stream": False,
        }
        out = await send(
            self._http(),
            "POST",
            self.endpoint.chat_url,
            json=body,
            policy=self.retry,
            timeout_s=self.timeout_s,
            max_bytes=self.max_reply_bytes,
        )
        if out.reply is None:
            fix = (
                "raise distill.max_reply_bytes or lower distill.max_tokens"
                if out.too_large
                else "check that the teacher URL is an OpenAI-compatible chat completions server; "
                "distill.request_timeout_s and distill.max_retries bound the waiting"
            )
            return TeacherReply("", error=f"{out.error}; {fix}", retries=out.retries)
        if out.reply.status != 200:
            why = f"HTTP {out.reply.status}: {out.reply.head(300)}"
            return TeacherReply("", error=why, retries=out.retries)
        return _parse(out.reply, out.retries)


def _parse(resp: Reply, attempt: int) -> TeacherReply:
    try:
        data = json.loads(resp.body)
        choice = data["choices"][0]
        text = choice["message"].get("content") or ""
        finish = choice.get("finish_reason")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as err:
        return TeacherReply(
            "", error=f"malformed chat completion ({err!r}): {resp.head(200)}", retries=attempt
        )
    usage = data.get("usage") or {}
    counts = (
        [_token_count(usage, k) for k in ("prompt_tokens", "completion_tokens")]
        if isinstance(usage, dict)
        else []
    )
    if len(counts) != 2 or None in counts:
        return TeacherReply(
            "",
            error=f"malformed chat completion: usage {str(usage)[:120]} is not "
            "{prompt_tokens: int, completion_tokens: int}; the server must report token counts "
            "as non-negative integers (or leave usage out)",
            retries=attempt,
        )
    return TeacherReply(
        str(text),
        refused=is_refusal(str(text), finish),
        prompt_tokens=counts[0] or 0,
        completion_tokens=counts[1] or 0,
        retries=attempt,
    )


def _token_count(usage: dict[str, Any], key: str) -> int | None:
    """``usage[key]`` as a token count (missing or null: 0); None when it is not a non-negative
    whole number (a string, a bool, NaN, a fraction, a negative)."""
    v = usage.get(key)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and (not math.isfinite(v) or not v.is_integer()):
        return None
    return int(v) if v >= 0 else None
