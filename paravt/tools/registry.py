"""Tool registry: the built-in tools plus plugins from the ``paravt.tools`` entry-point group.

A third-party package adds a tool without touching paravt by declaring, in its packaging metadata,

    [project.entry-points."paravt.tools"]
    my_tool = "my_pkg.tools:MyTool"      # a class (or zero-argument factory) returning a Tool

Names are unique: a plugin whose name is already taken (built-in or another plugin) is rejected
with both origins in the message. An unknown name is answered with "did you mean" and the list.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from paravt.config.choices import TOOL_ENTRY_POINTS, note_tool
from paravt.errors import ConfigError
from paravt.tools.base import Tool

ENTRY_POINT_GROUP = TOOL_ENTRY_POINTS
#: A ``rollout.tools`` entry ``mcp:URL`` or ``mcp:COMMAND`` names an MCP server
#: (paravt.tools.mcp_tools).
MCP_PREFIX = "mcp:"


def is_mcp_ref(name: str) -> bool:
    return name.startswith(MCP_PREFIX)


ToolFactory = Callable[..., Tool]


@dataclass(frozen=True)
class _Entry:
    factory: ToolFactory
    origin: str  # "builtin:<module>" or "entry-point:<dist> <value>"


_REGISTRY: dict[str, _Entry] = {}
_DISCOVERED = False


def register_tool(name: str, factory: ToolFactory, *, origin: str | None = None) -> None:
    """Add a tool factory under ``name``; `ConfigError` if the name is taken by another origin."""
    module = getattr(factory, "__module__", "?")
    qualname = getattr(factory, "__qualname__", factory)
    origin = origin or f"code:{module}.{qualname!s}"
    existing = _REGISTRY.get(name)
    if existing is not None and existing.origin != origin:
        raise ConfigError(
            f"tool name {name!r} is registered twice: by {existing.origin} and by {origin}; "
            "rename one of the tools (tool names must be unique)"
        )
    _REGISTRY[name] = _Entry(factory, origin)
    note_tool(name)  # `rollout.tools` accepts it from now on (checked when the config loads)


def unregister_tool(name: str) -> None:
    _REGISTRY.pop(name, None)
    note_tool(name, registered=False)


def _register_builtins() -> None:
    from paravt.tools.crop import CropVideo
    from paravt.tools.frame_select import FrameSelect
    from paravt.tools.python_tool import PythonTool

    for cls in (CropVideo, FrameSelect, PythonTool):
        register_tool(cls.name, cls, origin=f"builtin:{cls.__module__}")


def discover_plugins(*, refresh: bool = False) -> None:
    """Load the built-ins and every ``paravt.tools`` entry point (once, or again with refresh)."""
    global _DISCOVERED
    if _DISCOVERED and not refresh:
        return
    _register_builtins()
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else "?"
        origin = f"entry-point:{dist} {ep.value}"
        existing = _REGISTRY.get(ep.name)
        if existing is not None and existing.origin == origin:
            continue
        try:
            factory = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must say which one it is
            raise ConfigError(
                f"tool plugin {ep.name!r} ({origin}) failed to import: {exc!r}; "
                "fix or uninstall that package"
            ) from exc
        register_tool(ep.name, factory, origin=origin)
    _DISCOVERED = True


def available_tools() -> tuple[str, ...]:
    discover_plugins()
    return tuple(sorted(_REGISTRY))


def unknown_tool_message(name: str, available: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(name, list(available), n=1, cutoff=0.5)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"unknown tool {name!r}.{hint} Available: {', '.join(sorted(available)) or '(none)'}"


def create_tool(name: str, options: Mapping[str, Any] | None = None) -> Tool:
    """Instantiate the tool registered as ``name`` (``options`` go to its factory)."""
    discover_plugins()
    entry = _REGISTRY.get(name)
    if entry is None:
        raise ConfigError(unknown_tool_message(name, available_tools()))
    tool = entry.factory(**dict(options or {}))
    if not isinstance(tool, Tool) or tool.name != name:
        raise ConfigError(
            f"tool {name!r} from {entry.origin} does not implement the Tool protocol "
            f"(name, spec, timeout_s, async run) or its name is {getattr(tool, 'name', None)!r}"
        )
    return tool
