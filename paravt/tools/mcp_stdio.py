"""A stdio transport for MCP servers whose replies are capped in BYTES before they are parsed.

The SDK's own stdio client keeps a line in memory however long it is and re-joins it per chunk
(an 8 MB reply took 15 s and 100 MB here). This one reads bytes, keeps at most
``max_message_bytes`` of a line, and answers a longer line with a JSON-RPC error for the request
id it names (read from the line's first bytes), so the one call fails at once ("reply over the
cap") while the session stays usable. Shutdown: stdin closed, 2 s grace, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectSendStream
from mcp import types
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.shared.message import SessionMessage

_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')
_HEAD_BYTES = 512  # enough of an over-cap line to find its request id
_GRACE_S = 2.0


def over_cap_message(size: int, cap: int) -> str:
    """The error text for a reply over ``cap`` bytes (shared with the HTTP transport, so both
    name the same setting)."""
    return (
        f"the MCP server's reply is {size:,}+ bytes, over the cap of {cap:,} "
        "(max_message_bytes); ask for less, or raise the cap on the MCP tool's config"
    )


def over_cap_reply(head: bytes, size: int, cap: int) -> SessionMessage | Exception:
    """The JSON-RPC error that stands for an over-cap reply (its id read from ``head``)."""
    found = _ID.search(head)
    message = over_cap_message(size, cap)
    if found is None:
        return ValueError(message)
    raw = found.group(1)
    rid: Any = int(raw) if raw[:1] != b'"' else raw[1:-1].decode(errors="replace")
    err = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": message}}
    return SessionMessage(types.jsonrpc_message_adapter.validate_python(err))


def _parsed(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


class _Lines:
    """Splits a byte stream into lines, keeping at most ``cap`` bytes of each."""

    def __init__(self, cap: int) -> None:
        self.cap, self.buf, self.size, self.head = cap, bytearray(), 0, b""

    def feed(self, chunk: bytes) -> list[SessionMessage | Exception]:
        out: list[SessionMessage | Exception] = []
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            piece = chunk[start:] if nl < 0 else chunk[start:nl]
            if self.size <= self.cap:
                self.buf += piece
                if len(self.buf) > self.cap:
                    self.head = bytes(self.buf[:_HEAD_BYTES])
                    self.buf = bytearray()
            self.size += len(piece)
            if nl < 0:
                return out
            if self.size > self.cap:
                out.append(over_cap_reply(self.head, self.size, self.cap))
            elif self.buf.strip():
                out.append(_parsed(bytes(self.buf)))
            self.buf, self.size, start = bytearray(), 0, nl + 1


async def _read(
    process: anyio.abc.Process,
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    cap: int,
    server: StdioServer,
) -> None:
    assert process.stdout is not None
    lines = _Lines(cap)
    async with sink:
        with contextlib.suppress(
            anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream
        ):
            async for chunk in process.stdout:
                for msg in lines.feed(chunk):
                    await sink.send(msg)
    server.eof = True  # the server exited or closed its output (crashed, killed)


async def _write(process: anyio.abc.Process, source: Any) -> None:
    assert process.stdin is not None
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async with source:
            async for msg in source:
                data = msg.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await process.stdin.send(data.encode())


async def _stop(process: anyio.abc.Process) -> None:
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    with anyio.move_on_after(_GRACE_S):
        await process.wait()
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with anyio.move_on_after(_GRACE_S):
            await process.wait()


def _exited(pid: int) -> bool:
    """The process has exited (a zombie, or reaped: its /proc entry is gone). False where /proc
    cannot tell (missing, or unreadable: hidepid, another PID namespace); then only EOF tells (the
    reader task sees it a moment later)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return False
    try:
        state = (proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    except (OSError, IndexError):
        return False
    return state in ("Z", "X")


class StdioServer:
    """One start of a stdio MCP server; ``transport()`` is the SDK ``Transport`` (read and write
    streams) for a ``Client``. ``ended``: its output reached EOF or its process is gone (a new
    start is needed)."""

    def __init__(self, params: StdioServerParameters, max_message_bytes: int) -> None:
        self.params, self.max_message_bytes = params, max_message_bytes
        self.eof = False
        self.pid: int | None = None

    @property
    def ended(self) -> bool:
        """EOF was read, or the process has exited. The second check closes a race: a killed
        server is dead (a zombie) before the reader task, on the session's loop, sees EOF, and a
        call sent then would fail with "Connection closed" instead of restarting the server."""
        return self.eof or (self.pid is not None and _exited(self.pid))

    @asynccontextmanager
    async def transport(self) -> AsyncIterator[Any]:
        p = self.params
        process = await anyio.open_process(
            [p.command, *p.args],
            env=get_default_environment() | (p.env or {}),
            cwd=p.cwd,
            stderr=None,
            start_new_session=True,
        )
        self.pid = process.pid
        read_w, read_r = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_w, write_r = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read, process, read_w, self.max_message_bytes, self)
            tg.start_soon(_write, process, write_r)
            try:
                yield read_r, write_w
            finally:
                with anyio.CancelScope(shield=True):
                    await write_w.aclose()
                    await _stop(process)
                    await read_r.aclose()
                tg.cancel_scope.cancel()


__all__ = ["StdioServer", "over_cap_message", "over_cap_reply"]
