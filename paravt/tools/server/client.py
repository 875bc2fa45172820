"""`RemoteToolSet`: the `ToolSet` interface over HTTP to a ``paravt serve-tools`` server.

The server must see the video at the same path (shared storage), under one of its video roots.
Each `RemoteToolSet` sends a random nonce (``session``) with every item, so its trajectories never
share server state with another caller's, even when the ids coincide. The episode's visual budget is
sent with each request and the server's updated budget is copied back into ``ctx.budget``.
Transport failures, server errors and malformed responses become error observations for the calls
of that request. Requests go through a keep-alive pool (`paravt.tools.server.pool`) and ask for the
binary frames encoding (`paravt.tools.server.wire.BINARY_TYPE`); a JSON response (an older server)
is read as well. With ``api_key_file`` (``rollout.tool_server_key_file``) every request carries
``Authorization: Bearer <key>`` (docs/tools.md, "Who may call"); the key is never in a message.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from paravt.config import read_key_file
from paravt.errors import ConfigError, ToolCallError
from paravt.protocol.parser import ParsedCall
from paravt.protocol.prompts import ToolSpec
from paravt.tools.base import Observation, ToolContext
from paravt.tools.registry import unknown_tool_message
from paravt.tools.server.pool import KeepAlivePool, PoolError, Response
from paravt.tools.server.wire import (
    BINARY_TYPE,
    apply_budget,
    context_to_wire,
    decode_binary,
    observation_from_wire,
)
from paravt.tools.toolset import ToolSet


class RemoteToolSet(ToolSet):
    def __init__(
        self,
        server_url: str,
        names: Sequence[str],
        *,
        timeouts: Mapping[str, float] | None = None,
        request_timeout_s: float | None = None,
        max_connections: int = 128,
        api_key_file: str | None = None,
    ) -> None:
        self.url = server_url.rstrip("/")
        self._key = (
            read_key_file(api_key_file, "rollout.tool_server_key_file") if api_key_file else None
        )
        auth = {"authorization": f"Bearer {self._key}"} if self._key else {}
        try:
            resp = httpx.get(f"{self.url}/v1/tools", timeout=10.0, headers=auth)
            if resp.status_code == 401:
                raise ConfigError(
                    f"tool server {self.url} refused the key (401): set "
                    "rollout.tool_server_key_file "
                    "to the file `paravt serve-tools --api-key-file` reads"
                    + (f" (sent the key of {api_key_file})" if api_key_file else " (sent none)")
                )
            served = resp.raise_for_status().json()
        except httpx.HTTPError as exc:
            raise ConfigError(
                f"tool server {self.url} is not reachable ({exc}); start it with "
                "`paravt serve-tools` or unset tool_server_url"
            ) from exc
        by_name = {t["name"]: t for t in served}
        for n in names:
            if n not in by_name:
                raise ConfigError(
                    f"tool server {self.url}: " + unknown_tool_message(n, sorted(by_name))
                )
        self.specs = tuple(
            ToolSpec(by_name[n]["name"], by_name[n]["description"], by_name[n]["parameters"])
            for n in names
        )
        self.names = frozenset(names)
        slowest = max(
            [float(by_name[n]["timeout_s"]) for n in names]
            + list((timeouts or {}).values())
            + [1.0]
        )
        self.timeout_s = request_timeout_s or slowest + 30.0
        self.max_connections = max_connections
        self.session = secrets.token_hex(
            16
        )  # per-run nonce: server state is keyed by (session, id)
        self._pool: KeepAlivePool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def pool(self) -> KeepAlivePool:
        """This event loop's keep-alive connection pool (callers may run each step under a new
        asyncio.run; connections belong to the loop that opened them)."""
        loop = asyncio.get_running_loop()
        if self._pool is None or self._loop is not loop:
            self._pool = KeepAlivePool(
                self.url,
                max_connections=self.max_connections,
                timeout_s=self.timeout_s,
                api_key=self._key,
            )
            self._loop = loop
        return self._pool

    async def run_calls(self, ctx: ToolContext, calls: Sequence[ParsedCall]) -> list[Observation]:
        wire_calls = [self._call_to_wire(c) for c in calls]
        item = {
            "session": self.session,
            "trajectory_id": ctx.episode_id,
            "context": context_to_wire(ctx),
            "calls": wire_calls,
        }
        try:
            resp = await self.pool.post(
                "/v1/batch",
                json.dumps({"items": [item]}).encode(),
                accept=f"{BINARY_TYPE}, application/json",
            )
        except PoolError as exc:
            return [
                Observation.failure(f"tool server unreachable: {type(exc).__name__}: {exc}")
                for _ in calls
            ]
        if resp.status_code != 200:
            reason = _error_text(resp)
            return [
                Observation.failure(f"tool server error {resp.status_code}: {reason}")
                for _ in calls
            ]
        try:
            obs, budget = _decode(resp, len(calls))
        except (ToolCallError, ValueError, KeyError, TypeError, IndexError) as exc:
            return [
                Observation.failure(
                    f"tool server sent a malformed response: {type(exc).__name__}: {exc}"
                )
                for _ in calls
            ]
        apply_budget(ctx, budget)
        return obs

    def _call_to_wire(self, call: ParsedCall) -> dict[str, Any]:
        error = call.error
        if error is None and call.name not in self.names:
            error = unknown_tool_message(str(call.name), sorted(self.names))
        return {"name": call.name, "arguments": call.arguments, "error": error}

    async def finish(self, ctx: ToolContext) -> None:
        try:
            body = {"session": self.session, "trajectory_ids": [ctx.episode_id]}
            await self.pool.post("/v1/finish", json.dumps(body).encode())
        except PoolError:
            pass  # the server's idle TTL releases the state anyway

    async def aclose(self) -> None:
        if self._pool is not None and self._loop is asyncio.get_running_loop():
            await self._pool.aclose()
        self._pool = self._loop = None


def _decode(resp: Response, n_calls: int) -> tuple[list[Observation], dict[str, Any]]:
    """The observations and budget of a one-item batch response, binary or JSON (older servers)."""
    if resp.headers.get("content-type", "").startswith(BINARY_TYPE):
        payload, buffers = decode_binary(resp.content)
    else:
        payload, buffers = resp.json(), None
    result = payload["results"][0]
    obs = [observation_from_wire(o, buffers) for o in result["observations"]]
    if len(obs) != n_calls:
        raise ToolCallError(f"{len(obs)} observations for {n_calls} calls")
    return obs, result["budget"]


def _error_text(resp: Response) -> str:
    try:
        return str(resp.json().get("error", resp.text))[:500]
    except ValueError:
        return resp.text[:500]
