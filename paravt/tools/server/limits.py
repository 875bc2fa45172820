"""Connection-level limits of the tool server: slow or oversized requests are cut off.

- `GuardedH11Protocol` (uvicorn's h11 protocol): a connection must deliver a complete request
  header within ``header_timeout_s`` of connecting (or of its previous response); otherwise it
  gets ``408`` and is closed. uvicorn alone keeps a connection that trickles header bytes forever.
- `BodyLimit` (ASGI middleware): the body must be at most ``max_body_bytes`` (``413``, checked on
  Content-Length first and while reading) and must arrive within ``body_timeout_s`` (``408``).
  The body is read completely before the app sees it.
- `uvicorn_config`: both, plus ``limit_concurrency`` (``503`` beyond ``max_connections``).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

Scope = dict[str, Any]
Message = dict[str, Any]


def _raw_response(status: int, reason: str, text: str) -> bytes:
    body = json.dumps({"error": text}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\nconnection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


class GuardedH11Protocol(H11Protocol):
    header_timeout_s: float = 10.0  # set per server by `guarded_protocol`

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._answered = False  # a response went out on this connection
        self._pending = False  # bytes of a request arrived since the last response
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        self._pending = True
        super().data_received(data)

    def _arm_header_timer(self) -> None:
        if getattr(self, "_header_timer", None) is not None:
            self._header_timer.cancel()  # type: ignore[union-attr]
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_timeout)

    def _header_timeout(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or (
            self.cycle is not None and not self.cycle.response_complete
        ):
            return  # closed already, or a request is being served (its body has its own limit)
        if self._pending or not self._answered:  # an idle keep-alive connection just closes
            msg = f"request header not received within header_timeout_s={self.header_timeout_s:g} s"
            self.transport.write(_raw_response(408, "Request Timeout", msg))
        self.transport.close()

    def on_response_complete(self) -> None:
        self._answered, self._pending = True, False
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        if getattr(self, "_header_timer", None) is not None:
            self._header_timer.cancel()  # type: ignore[union-attr]
            self._header_timer = None
        super().connection_lost(exc)


def guarded_protocol(header_timeout_s: float) -> type[GuardedH11Protocol]:
    return type("GuardedH11", (GuardedH11Protocol,), {"header_timeout_s": float(header_timeout_s)})


class BodyLimit:
    """ASGI middleware: the whole body, bounded in size and time, before the app runs."""

    def __init__(self, app: Any, *, max_body_bytes: int, body_timeout_s: float) -> None:
        self.app, self.max_body_bytes, self.body_timeout_s = app, max_body_bytes, body_timeout_s

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._reject(
                send,
                413,
                f"request body of {int(declared)} bytes exceeds "
                f"max_body_bytes={self.max_body_bytes}",
            )
            return
        chunks: list[bytes] = []
        size, deadline = 0, time.monotonic() + self.body_timeout_s
        more = True
        while more:
            try:
                msg = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                await self._reject(
                    send,
                    408,
                    f"request body not received within body_timeout_s={self.body_timeout_s:g} s",
                )
                return
            if msg["type"] == "http.disconnect":
                return
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await self._reject(
                    send, 413, f"request body exceeds max_body_bytes={self.max_body_bytes}"
                )
                return
            chunks.append(chunk)
            more = bool(msg.get("more_body"))
        body, delivered = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: disconnect notifications

        await self.app(scope, replay, send)

    @staticmethod
    async def _reject(send: Any, status: int, text: str) -> None:
        body = json.dumps({"error": text}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"connection", b"close"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def uvicorn_config(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    header_timeout_s: float,
    max_connections: int,
    **kwargs: Any,
) -> uvicorn.Config:
    """uvicorn settings of the tool server (the app must already be wrapped in `BodyLimit`)."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=guarded_protocol(header_timeout_s),
        limit_concurrency=max_connections,
        log_level="warning",
        **kwargs,
    )
