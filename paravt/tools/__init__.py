"""Tools (docs/ARCHITECTURE.md §1 ``tools/``): the `Tool` interface and registry (entry-point
plugins), ``crop_video``, ``frame_select`` (EVA), ``python`` (PyVision-RL, sandboxed), and the HTTP
tool
server and client. The Episode uses only `ToolSet` (`build_toolset`); see docs/tools.md."""

from __future__ import annotations

from paravt.tools.base import Observation, Tool, ToolContext, VisualBudget
from paravt.tools.build import build_toolset
from paravt.tools.registry import (
    ENTRY_POINT_GROUP,
    available_tools,
    create_tool,
    discover_plugins,
    register_tool,
    unregister_tool,
)
from paravt.tools.toolset import LocalToolSet, ToolSet

__all__ = [
    "ENTRY_POINT_GROUP",
    "LocalToolSet",
    "Observation",
    "Tool",
    "ToolContext",
    "ToolSet",
    "VisualBudget",
    "available_tools",
    "build_toolset",
    "create_tool",
    "discover_plugins",
    "register_tool",
    "unregister_tool",
]
