"""`ToolSet`: what the Episode calls. `LocalToolSet` runs tools in-process; `build_toolset`
switches to `paravt.tools.server.client.RemoteToolSet` when given a tool-server URL.

``run_calls`` runs all valid calls of a turn concurrently, each under its tool's timeout; a parser
error, an unknown tool, bad arguments, an exception, a timeout or a decode failure becomes
``Observation(error=...)`` for THAT call only. Results come back in call order.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from paravt.errors import ParavtError, ToolCallError
from paravt.protocol.parser import ParsedCall
from paravt.protocol.prompts import ToolSpec
from paravt.tools.base import Observation, Tool, ToolContext
from paravt.tools.registry import unknown_tool_message

log = logging.getLogger(__name__)

_JSON_TYPES: Mapping[str, tuple[type, ...]] = {
    "number": (int, float),
    "integer": (int,),
    "string": (str,),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list, tuple),
}


class ToolSet(abc.ABC):
    specs: tuple[ToolSpec, ...]
    names: frozenset[str]

    @abc.abstractmethod
    async def run_calls(
        self, ctx: ToolContext, calls: Sequence[ParsedCall]
    ) -> list[Observation]: ...

    @abc.abstractmethod
    async def finish(self, ctx: ToolContext) -> None: ...

    @abc.abstractmethod
    async def aclose(self) -> None: ...


def check_arguments(spec: ToolSpec, args: Mapping[str, Any]) -> None:
    """Required keys present, declared JSON types respected (strings are accepted for numbers:
    tools parse times such as "01:20"); extra keys are ignored. `ToolCallError` otherwise."""
    params = spec.parameters or {}
    props: Mapping[str, Any] = params.get("properties", {})
    missing = [k for k in params.get("required", []) if args.get(k) is None]
    if missing:
        raise ToolCallError(
            f"{spec.name} is missing {', '.join(map(repr, missing))}; "
            f"it takes {', '.join(props) or 'no arguments'}"
        )
    for key, value in args.items():
        kind = props.get(key, {}).get("type")
        if kind is None or value is None:
            continue
        ok = isinstance(value, _JSON_TYPES.get(kind, (object,))) and not (
            kind != "boolean" and isinstance(value, bool)
        )
        if kind in ("number", "integer") and isinstance(value, str):
            ok = True
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            ok = True
        if not ok:
            raise ToolCallError(f"{spec.name}: argument {key}={value!r} should be of type {kind}")


class LocalToolSet(ToolSet):
    """Tools in this process."""

    def __init__(
        self, tools: Sequence[Tool], *, timeouts: Mapping[str, float] | None = None
    ) -> None:
        self.tools = {t.name: t for t in tools}
        self.specs = tuple(t.spec for t in tools)
        self.names = frozenset(self.tools)
        self.timeouts = {
            name: float((timeouts or {}).get(name, t.timeout_s)) for name, t in self.tools.items()
        }

    async def run_calls(self, ctx: ToolContext, calls: Sequence[ParsedCall]) -> list[Observation]:
        return list(
            await asyncio.gather(*(self.run_one(ctx, c.name, c.arguments, c.error) for c in calls))
        )

    async def run_one(
        self,
        ctx: ToolContext,
        name: str | None,
        args: Mapping[str, Any],
        parse_error: str | None = None,
    ) -> Observation:
        if parse_error is not None:
            return Observation.failure(parse_error)
        tool = self.tools.get(name or "")
        if tool is None:
            return Observation.failure(unknown_tool_message(str(name), sorted(self.names)))
        timeout = self.timeouts[tool.name]
        try:
            check_arguments(tool.spec, args)
            return await asyncio.wait_for(tool.run(ctx, args), timeout)
        except TimeoutError:
            return replace(
                Observation.failure(f"{tool.name} timed out after {timeout:g} s"),
                metrics={"timeout": 1.0},
            )
        except ParavtError as exc:
            return Observation.failure(str(exc))
        except Exception as exc:  # noqa: BLE001 - a tool bug must not end the episode
            log.exception("tool %s failed", tool.name)
            return Observation.failure(f"{tool.name} failed: {type(exc).__name__}: {exc}")

    async def finish(self, ctx: ToolContext) -> None:
        for tool in self.tools.values():
            fin = getattr(tool, "finish", None)
            if fin is not None:
                await fin(ctx)

    async def aclose(self) -> None:
        for tool in self.tools.values():
            close = getattr(tool, "aclose", None)
            if close is not None:
                await close()
