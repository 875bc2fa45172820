"""`KeepAlivePool`: a small HTTP/1.1 client over asyncio streams for `RemoteToolSet`.

Connections to the ONE tool server are kept alive and reused (at most ``max_connections`` open; a
caller beyond that waits for a free one). Per request it writes one buffer and reads the response
with Content-Length or chunked framing (or until close). A connection the server has closed
while idle is noticed before reuse (EOF already seen) and replaced. httpx does the same job at
several times the CPU per request (its pool scans every connection on each request), which
dominated the remote tool path at 64 concurrent callers (issue 14.3).

Errors: `PoolError` (connect, reset, malformed response, timeout); the caller turns it into error
observations. TLS for ``https://`` URLs uses the default verified context.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

MAX_RESPONSE_BYTES = 1 << 30
MAX_HEADER_BYTES = 64 << 10

_Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class PoolError(Exception):
    """A request failed at the transport level (message says how)."""


@dataclass
class Response:
    status_code: int
    headers: dict[str, str]  # lower-cased names
    content: bytes = field(repr=False)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


class KeepAlivePool:
    def __init__(
        self,
        url: str,
        *,
        max_connections: int,
        timeout_s: float,
        connect_timeout_s: float = 10.0,
        api_key: str | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"tool server URL {url!r} is not http(s)://host[:port]")
        self.host, self.prefix = parts.hostname, parts.path.rstrip("/")
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.tls = ssl.create_default_context() if parts.scheme == "https" else None
        self.authority = parts.netloc.encode("ascii")
        self.timeout_s, self.connect_timeout_s = timeout_s, connect_timeout_s
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: list[_Conn] = []
        # sent with every request; a key is printable ASCII without spaces (paravt.config.keys)
        self._auth = f"authorization: Bearer {api_key}\r\n" if api_key else ""

    async def post(
        self,
        path: str,
        body: bytes,
        *,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> Response:
        head = (
            f"POST {self.prefix}{path} HTTP/1.1\r\nhost: {self.authority.decode()}\r\n"
            f"content-type: {content_type}\r\naccept: {accept}\r\n{self._auth}content-length: "
            f"{len(body)}\r\n\r\n"
        )
        async with self._slots:
            try:
                return await asyncio.wait_for(
                    self._exchange(head.encode("latin-1") + body), self.timeout_s
                )
            except TimeoutError:
                raise PoolError(f"no response within {self.timeout_s:g} s") from None
            except (
                OSError,
                asyncio.IncompleteReadError,
                asyncio.LimitOverrunError,
                ValueError,
            ) as exc:
                raise PoolError(f"{type(exc).__name__}: {exc}") from None

    async def _exchange(self, request: bytes) -> Response:
        reader, writer = await self._connection()
        try:
            writer.write(request)
            resp, keep = await _read_response(reader)
        except BaseException:
            writer.close()
            raise
        if keep:
            self._idle.append((reader, writer))
        else:
            writer.close()
        return resp

    async def _connection(self) -> _Conn:
        while self._idle:
            reader, writer = self._idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()  # the server closed it while idle (keep-alive timeout)
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, ssl=self.tls, limit=MAX_HEADER_BYTES),
                self.connect_timeout_s,
            )
        except TimeoutError:
            raise PoolError(
                f"could not connect to {self.host}:{self.port} within {self.connect_timeout_s:g} s"
            ) from None

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for _, writer in idle:
            writer.close()


async def _read_response(reader: asyncio.StreamReader) -> tuple[Response, bool]:
    """One response; ``keep`` is whether the connection may carry the next request."""
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ValueError(f"malformed status line {lines[0][:100]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    keep = headers.get("connection", "").lower() != "close" and parts[0] == "HTTP/1.1"
    if "chunked" in headers.get("transfer-encoding", "").lower():
        content = await _read_chunked(reader)
    elif "content-length" in headers:
        n = int(headers["content-length"])
        if not 0 <= n <= MAX_RESPONSE_BYTES:
            raise ValueError(f"response of {n} bytes exceeds {MAX_RESPONSE_BYTES}")
        content = await reader.readexactly(n)
    else:
        content, keep = await reader.read(MAX_RESPONSE_BYTES), False
    return Response(int(parts[1]), headers, content), keep


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
        total += size
        if total > MAX_RESPONSE_BYTES:
            raise ValueError(f"chunked response exceeds {MAX_RESPONSE_BYTES} bytes")
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                pass
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)
