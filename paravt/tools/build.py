"""``build_toolset``: the enabled tools as one ``ToolSet``, in-process (``LocalToolSet``, MCP
servers included) or through a tool server (``RemoteToolSet``). It sits above both so that the
toolset and its HTTP client do not import each other."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from paravt.errors import ConfigError
from paravt.tools.base import Tool
from paravt.tools.registry import create_tool, is_mcp_ref
from paravt.tools.server.client import RemoteToolSet
from paravt.tools.toolset import LocalToolSet, ToolSet


def build_toolset(
    names: Sequence[str],
    *,
    server_url: str | None = None,
    timeouts: Mapping[str, float] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    server_key_file: str | None = None,
) -> ToolSet:
    """The enabled tools, in-process or through a tool server (``server_url``); an ``mcp:`` entry
    adds every tool of that MCP server (in-process only; ``timeouts[entry]`` is its per-call
    timeout, default 30 s; ``options[entry]`` its caps, `mcp_tools.McpLimits`). ``timeouts``
    override tools' own ``timeout_s``; ``options`` are passed to a tool's factory (local only);
    ``server_key_file``: the tool server's key file (``rollout.tool_server_key_file``).
    Unknown names raise `ConfigError` listing the available tools."""
    if len(set(names)) != len(names):
        raise ConfigError(f"tool names {list(names)} contain duplicates; list each tool once")
    mcp_refs = [n for n in names if is_mcp_ref(n)]  # MCP servers (paravt.tools.mcp_tools)
    if server_url is not None:
        if mcp_refs:
            raise ConfigError(
                f"{mcp_refs} are MCP servers, used in-process; unset rollout.tool_server_url "
                "or serve them from the tool server's side"
            )
        return RemoteToolSet(server_url, names, timeouts=timeouts, api_key_file=server_key_file)
    tools: list[Tool] = [create_tool(n, (options or {}).get(n)) for n in names if n not in mcp_refs]
    if mcp_refs:
        from paravt.tools.mcp_tools import mcp_tools

        for ref in mcp_refs:
            tools += mcp_tools(
                ref,
                timeout_s=float((timeouts or {}).get(ref, 30.0)),
                **(options or {}).get(ref, {}),
            )
    taken = [t.name for t in tools]
    if len(set(taken)) != len(taken):
        raise ConfigError(
            f"tool names {taken} contain duplicates (an MCP server's tool shadows another tool)"
        )
    return LocalToolSet(tools, timeouts=timeouts)
