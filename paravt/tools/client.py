"""`RemoteToolSet`: the `ToolSet` interface over HTTP to a ``paravt serve-tools`` server.

The server must see the video at the same path (shared storage), under one of its video roots.
Each `RemoteToolSet` sends a random nonce (``session``) with every item, so its trajectories never
share server state with another caller's, even when the ids coincide. The episode's visual budget is
sent with each request and the server's updated budget is copied back into ``ctx.budget``.
Transport failures and server errors become error observations for the calls of that request.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from paravt.errors import ConfigError
from paravt.protocol.parser import ParsedCall
from paravt.protocol.prompts import ToolSpec
from paravt.tools.base import Observation, ToolContext
from paravt.tools.registry import unknown_tool_message
from paravt.tools.toolset import ToolSet
from paravt.tools.wire import apply_budget, context_to_wire, observation_from_wire


class RemoteToolSet(ToolSet):
    def __init__(self, server_url: str, names: Sequence[str], *, timeouts: Mapping[str, float] | None = None,
                 request_timeout_s: float | None = None, max_connections: int = 128) -> None:
        self.url = server_url.rstrip("/")
        try:
            served = httpx.get(f"{self.url}/v1/tools", timeout=10.0).raise_for_status().json()
        except httpx.HTTPError as exc:
            raise ConfigError(f"tool server {self.url} is not reachable ({exc}); start it with "
                              "`paravt serve-tools` or unset tool_server_url") from exc
        by_name = {t["name"]: t for t in served}
        for n in names:
            if n not in by_name:
                raise ConfigError(f"tool server {self.url}: " + unknown_tool_message(n, sorted(by_name)))
        self.specs = tuple(ToolSpec(by_name[n]["name"], by_name[n]["description"], by_name[n]["parameters"])
                           for n in names)
        self.names = frozenset(names)
        slowest = max([float(by_name[n]["timeout_s"]) for n in names] + list((timeouts or {}).values()) + [1.0])
        self.timeout_s = request_timeout_s or slowest + 30.0
        self.max_connections = max_connections
        self.session = secrets.token_hex(16)  # per-run nonce: server state is keyed by (session, id)
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        """One pooled client per event loop (callers may run each step under a new asyncio.run)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client, self._loop = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout_s, connect=10.0),
                limits=httpx.Limits(max_connections=self.max_connections,
                                    max_keepalive_connections=self.max_connections)), loop
        return self._client

    async def run_calls(self, ctx: ToolContext, calls: Sequence[ParsedCall]) -> list[Observation]:
        wire_calls = [self._call_to_wire(c) for c in calls]
        item = {"session": self.session, "trajectory_id": ctx.episode_id, "context": context_to_wire(ctx),
                "calls": wire_calls}
        try:
            resp = await self.client.post(f"{self.url}/v1/batch", json={"items": [item]})
        except httpx.HTTPError as exc:
            return [Observation.failure(f"tool server unreachable: {type(exc).__name__}: {exc}") for _ in calls]
        if resp.status_code != 200:
            reason = _error_text(resp)
            return [Observation.failure(f"tool server error {resp.status_code}: {reason}") for _ in calls]
        result = resp.json()["results"][0]
        apply_budget(ctx, result["budget"])
        return [observation_from_wire(o) for o in result["observations"]]

    def _call_to_wire(self, call: ParsedCall) -> dict[str, Any]:
        error = call.error
        if error is None and call.name not in self.names:
            error = unknown_tool_message(str(call.name), sorted(self.names))
        return {"name": call.name, "arguments": call.arguments, "error": error}

    async def finish(self, ctx: ToolContext) -> None:
        try:
            await self.client.post(f"{self.url}/v1/finish",
                                   json={"session": self.session, "trajectory_ids": [ctx.episode_id]})
        except httpx.HTTPError:
            pass  # the server's idle TTL releases the state anyway

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.aclose()
        self._client = self._loop = None


def _error_text(resp: httpx.Response) -> str:
    try:
        return str(resp.json().get("error", resp.text))[:500]
    except ValueError:
        return resp.text[:500]
