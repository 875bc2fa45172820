"""MCP tools: every tool of a Model Context Protocol server becomes a paravt tool (official ``mcp``
SDK, ``pip install 'paravt[mcp]'``).

``rollout.tools`` names a server with an ``mcp:`` entry: ``mcp:http://host:port/mcp`` (streamable
HTTP) or ``mcp:python -m my_server --flag`` (a stdio command, split like a shell would). The
server's tools keep their names and JSON input schemas, so they appear in the system prompt like
the built-ins. A call's text content becomes the tool response; its image content becomes frames
shown inline to the main agent (resized like crops: ``ctx.crop_max_pixels`` / ``size_factor``);
``isError`` results, exceptions and timeouts (``timeout_s`` per call, also passed to the SDK as the
read timeout) become an ``error:`` line for that call only.

Size caps (`McpLimits`, the MCP tool's config; pass them as ``options[entry]`` of
``build_toolset``): a reply's text is cut to ``max_output_chars`` (8,000, as the python tool's
output) with a "…[N more characters truncated]" marker; a reply over ``max_message_bytes``
(4 MiB) is REFUSED before it is parsed: that call gets an error naming the cap, at once and without
holding the reply in memory, and the session goes on. A stdio server's reply is capped by our own
transport (`paravt.tools.mcp_stdio`); a streamable-HTTP server's by the httpx2 client we hand the
SDK (`_capped_http`): a JSON reply's body is counted as it arrives (refused at once when its
Content-Length is over the cap), an SSE event is capped by the SDK's ``max_sse_event_size``, and
a compressed reply (never asked for) is refused, as its decoded size would be unbounded.

Restarts: a stdio server that exits (crash, kill) is started again on the next call, which then
runs on the new process; a server that cannot be restarted gives that call an error.

The SDK's session belongs to the task that opened it, while episodes run on whatever event loop
their caller made (``asyncio.run`` per eval mode): each server is therefore connected ONCE, in a
dedicated thread with its own loop, and calls are handed to that loop.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import io
import shlex
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from paravt.errors import ConfigError
from paravt.protocol.prompts import ToolSpec
from paravt.tools.base import Observation, ToolContext
from paravt.tools.registry import MCP_PREFIX
from paravt.video import smart_resize
from paravt.video.types import Frames

try:  # the SDK's HTTP client, installed with the ``mcp`` extra (without it McpConnection says so)
    from httpx2 import AsyncByteStream as _ByteStream
except ImportError:  # pragma: no cover
    _ByteStream = object  # type: ignore[assignment,misc]


@dataclass(frozen=True)
class McpLimits:
    """Caps on what an MCP server may send back (see the module docstring)."""

    max_output_chars: int = 8000
    max_message_bytes: int = 4 << 20


def _target(ref: str) -> Any:
    """The SDK's server argument for an ``mcp:`` entry: a URL string or
    ``StdioServerParameters``."""
    body = ref[len(MCP_PREFIX) :].strip()
    if not body:
        raise ConfigError(
            f"{ref!r} names no MCP server; use mcp:http://host:port/mcp or mcp:COMMAND ARGS"
        )
    if body.startswith(("http://", "https://")):
        return body
    from mcp.client.stdio import StdioServerParameters

    argv = shlex.split(body)
    return StdioServerParameters(command=argv[0], args=argv[1:])


class _CappedBody(_ByteStream):
    """A response body that fails once more than ``cap`` bytes have arrived (before reading when
    its Content-Length says so), so an over-cap reply is never held whole; ``cap`` None (an SSE
    stream, capped per event by the SDK) counts nothing. A compressed body is refused: its decoded
    size is not bounded by its bytes. It raises ``httpx2.StreamError``, which the SDK, reading a
    JSON reply, turns into an error for that request only: the session goes on."""

    def __init__(self, inner: Any, cap: int | None, headers: Mapping[str, str]) -> None:
        self.inner, self.cap, self.read = inner, cap, 0
        self.encoding = headers.get("content-encoding", "identity").strip().lower() or "identity"
        length = headers.get("content-length", "")
        self.declared = int(length) if length.isdigit() else None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        import httpx2

        from paravt.tools.mcp_stdio import over_cap_message

        if self.encoding != "identity":
            raise httpx2.StreamError(
                f"the MCP server sent a compressed reply (Content-Encoding: "
                f"{self.encoding}) though none was asked for; refused"
            )
        if self.cap is not None and self.declared is not None and self.declared > self.cap:
            raise httpx2.StreamError(over_cap_message(self.declared, self.cap))
        chunks = self.inner.__aiter__()
        try:
            async for chunk in chunks:
                self.read += len(chunk)
                if self.cap is not None and self.read > self.cap:
                    raise httpx2.StreamError(over_cap_message(self.read, self.cap))
                yield chunk
        finally:
            if isinstance(chunks, AsyncGenerator):
                await chunks.aclose()

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def _capped_http(url: str, cap: int) -> AsyncIterator[Any]:
    """The SDK's streamable-HTTP transport (read and write streams) on an httpx2 client whose
    replies are capped at ``cap`` bytes: the SDK would otherwise read a JSON reply whole, however
    large. SSE responses are not counted whole (one stream carries many messages); their events
    are capped by the SDK's ``max_sse_event_size``. Timeouts as the SDK's default client."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async def cap_body(response: httpx2.Response) -> None:
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        response.stream = _CappedBody(
            response.stream, None if kind == "text/event-stream" else cap, response.headers
        )

    client = httpx2.AsyncClient(
        headers={"accept-encoding": "identity"},
        timeout=httpx2.Timeout(30.0, read=300.0),
        event_hooks={"response": [cap_body]},
    )
    async with (
        client,
        streamable_http_client(url, http_client=client, max_sse_event_size=cap) as streams,
    ):
        yield streams


class McpConnection:
    """One connected MCP server (see the module docstring for the thread and restarts)."""

    def __init__(
        self, ref: str, *, connect_timeout_s: float = 30.0, limits: McpLimits = McpLimits()
    ) -> None:
        try:
            from mcp import Client
        except ImportError:
            raise ConfigError(f"{ref!r} needs the MCP SDK: pip install 'paravt[mcp]'") from None
        self.ref, self.limits, self.connect_timeout_s = ref, limits, connect_timeout_s
        self._client_cls, self._target = Client, _target(ref)
        self._loop = asyncio.new_event_loop()
        self._closing: asyncio.Event | None = None
        self._client: Any = None
        self._stdio: Any = None  # the current StdioServer (stdio servers only)
        self._restart = threading.Lock()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"mcp {ref}", daemon=True
        )
        self._thread.start()
        try:
            self.tools: list[Any] = self._connect()
        except Exception as err:  # noqa: BLE001 - whatever the transport raised, say which server
            self.close()
            raise ConfigError(
                f"cannot connect to the MCP server {ref!r}: {type(err).__name__}: {err}"
            ) from None

    def _connect(self) -> list[Any]:
        """Start a session (and, for stdio, the server process); its tools. Blocks."""
        target = self._target
        if isinstance(target, str):  # a fresh transport per connect: a reconnect enters it again
            target = _capped_http(target, self.limits.max_message_bytes)
        else:
            from paravt.tools.mcp_stdio import StdioServer

            self._stdio = StdioServer(target, self.limits.max_message_bytes)
            target = self._stdio.transport()
        ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        self._main = asyncio.run_coroutine_threadsafe(self._serve(target, ready), self._loop)
        return ready.result(timeout=self.connect_timeout_s)

    async def _serve(self, target: Any, ready: concurrent.futures.Future[list[Any]]) -> None:
        self._closing = closing = asyncio.Event()
        try:
            async with self._client_cls(target) as client:
                self._client = client
                ready.set_result(list((await client.list_tools()).tools))
                await closing.wait()
        except BaseException as err:  # noqa: BLE001 - handed to the constructor (or dropped at close)
            if not ready.done():
                ready.set_exception(err if isinstance(err, Exception) else RuntimeError(repr(err)))
            if not isinstance(err, Exception):
                raise

    @property
    def ended(self) -> bool:
        """The session is over: its task ended, or the stdio server's output reached EOF."""
        return self._main.done() or (self._stdio is not None and self._stdio.ended)

    def _live_client(self) -> Any:
        """The session's client, the server started again first if it ended. Under the restart
        lock: a restart replaces the session (``_main``, ``_stdio``) before its new client exists,
        so a call must not read the client while one is in progress. Blocks."""
        with self._restart:
            if self.ended:
                self._end_session()
                try:
                    self._connect()
                except Exception as err:  # noqa: BLE001 - the call that needed it reports it
                    raise RuntimeError(
                        f"the MCP server {self.ref!r} ended and could not be restarted: "
                        f"{type(err).__name__}: {err}"
                    ) from None
            return self._client

    async def call(self, name: str, args: Mapping[str, Any], timeout_s: float) -> Any:
        # a crashed or killed server, or a restart under way (another call's): wait for the new
        # session
        restart = self.ended or self._restart.locked()
        client = await asyncio.to_thread(self._live_client) if restart else self._client
        fut = asyncio.run_coroutine_threadsafe(
            client.call_tool(name, dict(args), read_timeout_seconds=timeout_s), self._loop
        )
        return await asyncio.wrap_future(fut)

    def _end_session(self) -> None:
        if self._closing is not None:
            self._loop.call_soon_threadsafe(self._closing.set)
        try:
            self._main.result(timeout=10)
        except Exception:  # noqa: BLE001 - closing: the session's own errors no longer matter
            self._main.cancel()

    def close(self) -> None:
        """Close the session (stops a stdio server) and the thread; idempotent."""
        if not self._loop.is_closed() and self._thread.is_alive():
            if getattr(self, "_main", None) is not None:
                self._end_session()
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._loop.close()


def _frames(images: Sequence[bytes], ctx: ToolContext) -> Frames:
    arrays: list[np.ndarray] = []
    for raw in images:
        img = Image.open(io.BytesIO(raw)).convert("RGB")
        if not arrays:
            h, w = smart_resize(
                img.height, img.width, max_pixels=ctx.crop_max_pixels, factor=ctx.size_factor
            )
        arrays.append(np.asarray(img.resize((w, h)), dtype=np.uint8))
    return Frames(np.stack(arrays), tuple(float(i) for i in range(len(arrays))))


class McpTool:
    """One tool of an MCP server, as a paravt ``Tool``."""

    def __init__(self, conn: McpConnection, tool: Any, timeout_s: float) -> None:
        self.conn, self.name, self.timeout_s = conn, str(tool.name), timeout_s
        self.max_output_chars = conn.limits.max_output_chars
        self.spec = ToolSpec(
            name=self.name,
            description=str(tool.description or ""),
            parameters=dict(tool.input_schema or {}),
        )

    async def run(self, ctx: ToolContext, args: Mapping[str, Any]) -> Observation:
        try:
            result = await self.conn.call(self.name, args, self.timeout_s)
        except Exception as err:  # noqa: BLE001 - a failing MCP call is an error line, not a dead episode
            return Observation.failure(f"{self.name} failed: {type(err).__name__}: {err}")
        texts = [str(c.text) for c in result.content if getattr(c, "type", "") == "text"]
        texts = [_cap("\n".join(texts), self.max_output_chars)] if texts else []
        images = [
            base64.b64decode(c.data) for c in result.content if getattr(c, "type", "") == "image"
        ]
        if result.is_error:
            return Observation.failure(
                f"{self.name}: {' '.join(texts) or 'the MCP tool reported an error'}"
            )
        if not images:
            return Observation(text="\n".join(texts) or "(no output)")
        try:
            frames = _frames(images, ctx)
        except (OSError, ValueError) as err:
            return Observation.failure(f"{self.name} returned an unreadable image: {err}")
        text = "\n".join(texts) or f"{len(images)} image(s)"
        return Observation(text=text, frames=frames, delivery="inline")

    async def aclose(self) -> None:
        await asyncio.to_thread(self.conn.close)


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return (
        text[:limit]
        + f"\n…[{len(text) - limit} more characters truncated (max_output_chars={limit})]"
    )


def mcp_tools(
    ref: str,
    *,
    timeout_s: float = 30.0,
    max_output_chars: int = McpLimits.max_output_chars,
    max_message_bytes: int = McpLimits.max_message_bytes,
) -> list[McpTool]:
    """Connect to the MCP server ``ref`` (an ``mcp:`` entry) and wrap each of its tools."""
    conn = McpConnection(ref, limits=McpLimits(max_output_chars, max_message_bytes))
    if not conn.tools:
        conn.close()
        raise ConfigError(f"the MCP server {ref!r} offers no tools")
    return [McpTool(conn, t, timeout_s) for t in conn.tools]
