"""A small MCP server written with the official SDK, started by test_mcp_tools.py:
``python mcp_server.py stdio`` or ``python mcp_server.py http PORT`` (streamable HTTP at /mcp)."""

from __future__ import annotations

import io
import os
import sys
import time

from mcp import types
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from PIL import Image as PILImage

server = MCPServer("paravt-test")

_RGB = {"red": (220, 30, 30), "green": (30, 200, 60), "blue": (30, 60, 220)}


@server.tool()
def describe(topic: str) -> str:
    """Describe a topic in one line."""
    return f"{topic}: a short description"


@server.tool()
def swatch(colour: str, n: int = 2) -> list[Image]:
    """n solid colour images of 50x40 pixels."""
    buf = io.BytesIO()
    PILImage.new("RGB", (50, 40), _RGB[colour]).save(buf, format="PNG")
    return [Image(data=buf.getvalue(), format="png") for _ in range(n)]


@server.tool()
def broken(reason: str) -> str:
    """Always fails (a ToolError's message reaches the client)."""
    raise ToolError(f"broken on purpose: {reason}")


@server.tool()
def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    time.sleep(seconds)
    return "done"


@server.tool()
def big(megabytes: float) -> str:
    """A text reply of about ``megabytes`` MB (the client caps it)."""
    return "x" * int(megabytes * 1_000_000)


@server.tool()
async def big_streamed(megabytes: float, ctx: Context) -> str:
    """As ``big``, after a notification: over streamable HTTP the reply comes as an SSE stream."""
    await ctx.session.send_notification(
        types.ToolListChangedNotification(), related_request_id=ctx.request_id
    )
    return "x" * int(megabytes * 1_000_000)


@server.tool()
def pid() -> str:
    """This server's process id (a test kills it)."""
    return str(os.getpid())


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
