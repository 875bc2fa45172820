"""The ONE HTTP policy of the OpenAI-compatible clients (``paravt.http.retry``), against a
real loopback server (``tests/raw_http.py``): 429 / 503 with ``Retry-After`` are waited out for
about as long as the server asked, then the 200 is read; a 400 fails at once. The same server
answers the openai backend, the LLM judge and the distillation teacher: all three follow it."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from email.utils import format_datetime

import httpx
import pytest

from paravt.distill.teacher import Endpoint, TeacherClient
from paravt.http.retry import RETRY_STATUS, RetryPolicy, retry_after_s, send
from paravt.models.base import ChatMessage, GenRequest, SamplingParams
from paravt.models.openai.backend import OpenAIGenerator
from paravt.models.openai.judge import JudgeItem, LLMJudge
from raw_http import RawServer

COMPLETION = {
    "choices": [{"message": {"content": "1"}, "finish_reason": "stop", "token_ids": [5, 6, 2]}],
    "usage": {"prompt_tokens": 4, "completion_tokens": 3},
}


def _raw(status: str, body: object, *headers: str) -> bytes:
    data = json.dumps(body).encode()
    head = [
        f"HTTP/1.1 {status}",
        "Content-Type: application/json",
        f"Content-Length: {len(data)}",
        "Connection: close",
        *headers,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


class Script:
    """The server's replies in order (the last one repeats), and when each request arrived."""

    def __init__(self, *replies: bytes) -> None:
        self.replies, self.arrivals = replies, []
        self._lock = threading.Lock()

    def __call__(self, conn: socket.socket, stop: threading.Event) -> None:
        with self._lock:
            self.arrivals.append(time.monotonic())
            reply = self.replies[min(len(self.arrivals), len(self.replies)) - 1]
        conn.sendall(reply)

    def gaps(self) -> list[float]:
        return [b - a for a, b in zip(self.arrivals, self.arrivals[1:])]


RATE_LIMITED = _raw("429 Too Many Requests", {"error": "slow down"}, "Retry-After: 1")
UNAVAILABLE = _raw("503 Service Unavailable", {"error": "loading"}, "Retry-After: 1")
OK = _raw("200 OK", COMPLETION)
BAD_REQUEST = _raw("400 Bad Request", {"error": "no such field"}, "Retry-After: 5")


class _Tokenizer:
    def convert_tokens_to_ids(self, token: str) -> int:
        return 2

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return "1"


async def _backend(url: str, **kw: float) -> tuple[bool, int]:
    gen = OpenAIGenerator(
        url, tokenizer=_Tokenizer(), model="tiny", timeout_s=10.0, retry=RetryPolicy(**kw)
    )
    req = GenRequest(
        prompt_ids=(),
        messages=(ChatMessage("user", "Hi?"),),
        sampling=SamplingParams(max_new_tokens=4),
    )
    try:
        out = (await gen.generate([req]))[0]
    finally:
        await gen.aclose()
    return out.finish_reason == "stop", int(out.metrics.get("attempts", 0)) - 1


async def _judge(url: str, **kw: float) -> tuple[bool, int]:
    async with LLMJudge(url, "judge", timeout_s=10.0, **kw) as judge:
        res = await judge.score([JudgeItem("q", "red cat", "a dog")])
    return res.stats.n_judged == 1 and res.scores == (1.0,), res.stats.n_retries


async def _teacher(url: str, **kw: float) -> tuple[bool, int]:
    client = TeacherClient(Endpoint(url, "m"), timeout_s=10.0, **kw)
    try:
        reply = await client.chat([{"role": "user", "content": "q"}])
    finally:
        await client.aclose()
    return reply.ok and reply.text == "1", reply.retries


CLIENTS: dict[str, Callable[..., Awaitable[tuple[bool, int]]]] = {
    "openai backend": _backend,
    "llm judge": _judge,
    "distill teacher": _teacher,
}


@pytest.mark.parametrize("client", CLIENTS)
def test_429_and_503_are_waited_out_for_their_retry_after_then_read(client: str) -> None:
    script = Script(RATE_LIMITED, UNAVAILABLE, OK)
    with RawServer(script) as srv:
        ok, retries = asyncio.run(CLIENTS[client](srv.url + "/v1", max_retries=3, backoff_s=0.01))
    assert ok and retries == 2 and len(script.arrivals) == 3
    # the back-off alone would wait 0.01 s then 0.02 s; the server asked for 1 s each time
    assert all(0.95 <= gap < 1.6 for gap in script.gaps()), script.gaps()


@pytest.mark.parametrize("client", CLIENTS)
def test_a_400_fails_at_once_whatever_its_retry_after(client: str) -> None:
    script = Script(BAD_REQUEST, OK)
    with RawServer(script) as srv:
        t0 = time.monotonic()
        ok, _ = asyncio.run(CLIENTS[client](srv.url + "/v1", max_retries=3, backoff_s=1.0))
        took = time.monotonic() - t0
    # a retry would wait 1 s (back-off) or 5 s (the Retry-After)
    assert not ok and len(script.arrivals) == 1 and took < 0.9, took


def test_send_returns_the_last_failure_after_the_retries_and_never_raises() -> None:
    script = Script(UNAVAILABLE)

    async def go() -> object:
        async with httpx.AsyncClient() as client:
            policy = RetryPolicy(max_retries=1, backoff_s=0.01, max_wait_s=0.2)
            return await send(
                client,
                "POST",
                srv.url + "/v1/chat/completions",
                json={},
                timeout_s=5.0,
                max_bytes=1 << 20,
                policy=policy,
            )

    with RawServer(script) as srv:
        out = asyncio.run(go())
    assert out.reply is None and out.attempts == 2 and len(script.arrivals) == 2
    assert out.error.startswith("failed after 2 attempts: HTTP 503 from ")
    assert 0.19 <= script.gaps()[0] < 0.7  # Retry-After 1 s, cut to max_wait_s


def test_the_wait_doubles_and_a_longer_retry_after_wins_up_to_the_cap() -> None:
    p = RetryPolicy(max_retries=5, backoff_s=0.5, max_wait_s=60.0)
    # back-off alone: 0.5 * 2**retry
    assert [p.wait_s(r) for r in range(4)] == [0.5, 1.0, 2.0, 4.0]
    # the server's Retry-After counts when longer: retry 0 waits 3 s, not 0.5; retry 3 keeps its 4 s
    assert p.wait_s(0, "3") == 3.0 and p.wait_s(3, "3") == 4.0 and p.wait_s(0, "0.1") == 0.5
    assert p.wait_s(0, "3600") == 60.0 and p.wait_s(10) == 60.0  # neither waits past max_wait_s
    assert p.wait_s(1, "soon") == 1.0 and p.wait_s(1, "") == 1.0  # unreadable: the back-off decides


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()
    in_7s = format_datetime(datetime(2026, 1, 2, 3, 4, 12, tzinfo=UTC), usegmt=True)
    past = format_datetime(datetime(2025, 1, 1, tzinfo=UTC), usegmt=True)
    assert retry_after_s(in_7s, now=now) == 7.0 and retry_after_s(past, now=now) == 0.0
    assert retry_after_s("2") == 2.0 and retry_after_s(" 1.5 ") == 1.5
    assert retry_after_s("-3") == 0.0
    assert [retry_after_s(v) for v in (None, "", "nan", "inf", "Tuesday", "1 2")] == [None] * 6
    assert {429, 503} <= RETRY_STATUS and not {400, 401, 404, 422} & RETRY_STATUS
