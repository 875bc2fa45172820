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
output) with a "…[N more characters truncated]" marker; a stdio server's reply over
``max_message_bytes`` (4 MiB) is REFUSED before it is parsed (`paravt.tools.mcp_stdio`): that call
gets an error naming the cap, at once and without holding the reply in memory. (A streamable-HTTP
reply is read by the SDK; only its text cap applies.)

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
from collections.abc import Mapping, Sequence
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


@dataclass(frozen=True)
class McpLimits:
    """Caps on what an MCP server may send back (see the module docstring)."""

    max_output_chars: int = 8000
    max_message_bytes: int = 4 << 20


def _target(ref: str) -> Any:
    """The SDK's server argument for an ``mcp:`` entry: a URL string or ``StdioServerParameters``."""
    body = ref[len(MCP_PREFIX):].strip()
    if not body:
        raise ConfigError(f"{ref!r} names no MCP server; use mcp:http://host:port/mcp or mcp:COMMAND ARGS")
    if body.startswith(("http://", "https://")):
        return body
    from mcp.client.stdio import StdioServerParameters

    argv = shlex.split(body)
    return StdioServerParameters(command=argv[0], args=argv[1:])


class McpConnection:
    """One connected MCP server (see the module docstring for the thread and restarts)."""

    def __init__(self, ref: str, *, connect_timeout_s: float = 30.0, limits: McpLimits = McpLimits()) -> None:
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
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp {ref}", daemon=True)
        self._thread.start()
        try:
            self.tools: list[Any] = self._connect()
        except Exception as err:  # noqa: BLE001 - whatever the transport raised, say which server
            self.close()
            raise ConfigError(f"cannot connect to the MCP server {ref!r}: {type(err).__name__}: {err}") from None

    def _connect(self) -> list[Any]:
        """Start a session (and, for stdio, the server process); its tools. Blocks."""
        target = self._target
        if not isinstance(target, str):
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

    def _restart_if_ended(self) -> None:
        with self._restart:
            if not self.ended:
                return
            self._end_session()
            try:
                self._connect()
            except Exception as err:  # noqa: BLE001 - the call that needed it reports it
                raise RuntimeError(f"the MCP server {self.ref!r} ended and could not be restarted: "
                                   f"{type(err).__name__}: {err}") from None

    async def call(self, name: str, args: Mapping[str, Any], timeout_s: float) -> Any:
        if self.ended:  # a crashed or killed server: start it again for this call
            await asyncio.to_thread(self._restart_if_ended)
        fut = asyncio.run_coroutine_threadsafe(
            self._client.call_tool(name, dict(args), read_timeout_seconds=timeout_s), self._loop)
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
    arrays = []
    for raw in images:
        img = Image.open(io.BytesIO(raw)).convert("RGB")
        if not arrays:
            h, w = smart_resize(img.height, img.width, max_pixels=ctx.crop_max_pixels, factor=ctx.size_factor)
        arrays.append(np.asarray(img.resize((w, h)), dtype=np.uint8))
    return Frames(np.stack(arrays), tuple(float(i) for i in range(len(arrays))))


class McpTool:
    """One tool of an MCP server, as a paravt ``Tool``."""

    def __init__(self, conn: McpConnection, tool: Any, timeout_s: float) -> None:
        self.conn, self.name, self.timeout_s = conn, str(tool.name), timeout_s
        self.max_output_chars = conn.limits.max_output_chars
        self.spec = ToolSpec(name=self.name, description=str(tool.description or ""),
                             parameters=dict(tool.input_schema or {}))

    async def run(self, ctx: ToolContext, args: Mapping[str, Any]) -> Observation:
        try:
            result = await self.conn.call(self.name, args, self.timeout_s)
        except Exception as err:  # noqa: BLE001 - a failing MCP call is an error line, not a dead episode
            return Observation.failure(f"{self.name} failed: {type(err).__name__}: {err}")
        texts = [str(c.text) for c in result.content if getattr(c, "type", "") == "text"]
        texts = [_cap("\n".join(texts), self.max_output_chars)] if texts else []
        images = [base64.b64decode(c.data) for c in result.content if getattr(c, "type", "") == "image"]
        if result.is_error:
            return Observation.failure(f"{self.name}: {' '.join(texts) or 'the MCP tool reported an error'}")
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
    return text[:limit] + f"\n…[{len(text) - limit} more characters truncated (max_output_chars={limit})]"


def mcp_tools(ref: str, *, timeout_s: float = 30.0, max_output_chars: int = McpLimits.max_output_chars,
              max_message_bytes: int = McpLimits.max_message_bytes) -> list[McpTool]:
    """Connect to the MCP server ``ref`` (an ``mcp:`` entry) and wrap each of its tools."""
    conn = McpConnection(ref, limits=McpLimits(max_output_chars, max_message_bytes))
    if not conn.tools:
        conn.close()
        raise ConfigError(f"the MCP server {ref!r} offers no tools")
    return [McpTool(conn, t, timeout_s) for t in conn.tools]
