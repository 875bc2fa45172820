"""One HTTP exchange bounded as a whole, shared by the openai backend and the LLM judge (torch-free,
so that reward code can import it). httpx's ``timeout`` bounds each read, not the request: a server
that sends its headers and then one byte a second keeps a call alive far past it.
``bounded_request`` puts ONE deadline on connect, headers and body together (the event loop's
clock), and reads the body
while it streams, refusing it past ``max_bytes`` (by its Content-Length, else as it grows: never
held in memory beyond the cap). The distillation teacher (``paravt.distill.teacher``) uses it
too."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class Reply:
    """One HTTP reply, read whole within the deadline and the size cap."""

    status: int
    body: bytes
    url: str  # the URL asked (error messages name it)
    retry_after: str | None = None

    def head(self, n: int) -> str:
        return self.body[:n].decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body as JSON; ``ValueError`` when it is not (bad UTF-8 included)."""
        return json.loads(self.body)


class ReplyTooLarge(Exception):
    """The reply's body is over the cap: an error at once (a retry would bring the same body)."""

    def __init__(self, size: int, cap: int, *, declared: bool) -> None:
        super().__init__(
            f"{'declared' if declared else 'over'} {size} bytes > max_reply_bytes={cap}"
        )
        self.size, self.cap, self.declared = size, cap, declared


async def bounded_request(
    client: httpx.AsyncClient, method: str, url: str, *, timeout_s: float, max_bytes: int, **kw: Any
) -> Reply:
    """``client.request(method, url, **kw)`` read whole within ``timeout_s`` and ``max_bytes``.
    Raises ``TimeoutError`` at the deadline, ``ReplyTooLarge`` past the cap, and httpx's errors as
    they come (the caller sorts them into its retried and its fatal failures)."""
    return await asyncio.wait_for(_read(client, method, url, max_bytes, **kw), timeout=timeout_s)


async def _read(client: httpx.AsyncClient, method: str, url: str, cap: int, **kw: Any) -> Reply:
    async with client.stream(method, url, **kw) as resp:
        declared = resp.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise ReplyTooLarge(int(declared), cap, declared=True)
        buf = bytearray()
        async for chunk in resp.aiter_bytes():
            buf += chunk
            if len(buf) > cap:
                raise ReplyTooLarge(len(buf), cap, declared=False)
        return Reply(
            resp.status_code, bytes(buf), str(resp.request.url), resp.headers.get("retry-after")
        )
