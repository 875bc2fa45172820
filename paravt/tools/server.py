"""The tool server: `create_app` (FastAPI) behind ``paravt serve-tools``.

Endpoints
- ``POST /v1/batch``: ``{"items": [{"trajectory_id", "context", "calls": [{"name", "arguments",
  "error"}]}]}`` → ``{"results": [{"trajectory_id", "observations": [...], "budget": {...}}]}``.
  Items run concurrently; calls of one item run as `LocalToolSet.run_calls` does. Send at most one
  item per trajectory per request (the budget state of an item is returned with it).
- ``POST /v1/finish``: ``{"trajectory_ids": [...]}`` releases per-trajectory state (python runtimes);
  idle state is also released after ``idle_ttl_s``.
- ``GET /v1/tools``: the served tools' specs and timeouts. ``GET /health``. ``GET /metrics``.

Each batch request holds one of ``max_concurrency`` slots (a semaphore) and must finish within
``request_timeout_s`` (waiting for a slot included); otherwise it gets HTTP 504 with an error and
its slot is freed (running python code is killed; a decode already running in a worker thread
finishes in the background and its result is dropped).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, Field

from paravt.errors import ParavtError
from paravt.tools.metrics import Metrics
from paravt.tools.sandbox import isolation_mode
from paravt.tools.toolset import LocalToolSet, build_toolset
from paravt.tools.wire import budget_to_wire, context_from_wire, observation_to_wire


class CallIn(BaseModel):
    name: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class BatchItem(BaseModel):
    trajectory_id: str
    context: dict[str, Any]
    calls: list[CallIn]


class BatchRequest(BaseModel):
    items: list[BatchItem]


class FinishRequest(BaseModel):
    trajectory_ids: list[str]


def _tool_options(names: Sequence[str], idle_ttl_s: float) -> dict[str, dict[str, Any]]:
    return {"python": {"idle_ttl_s": idle_ttl_s}} if "python" in names else {}


def create_app(names: Sequence[str], *, max_concurrency: int = 64, request_timeout_s: float = 120.0,
               idle_ttl_s: float = 300.0, timeouts: dict[str, float] | None = None) -> FastAPI:
    """A tool server for the tools ``names`` (unknown names raise `ConfigError` now)."""
    toolset = build_toolset(list(names), timeouts=timeouts, options=_tool_options(names, idle_ttl_s))
    assert isinstance(toolset, LocalToolSet)
    metrics = Metrics()
    state = {"inflight": 0}
    slots: dict[str, asyncio.Semaphore] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        slots["sem"] = asyncio.Semaphore(max_concurrency)
        yield
        await toolset.aclose()

    app = FastAPI(title="paravt tool server", lifespan=lifespan)
    app.state.toolset, app.state.metrics = toolset, metrics

    async def run_item(item: BatchItem) -> dict[str, Any]:
        ctx = context_from_wire(item.context, episode_id=item.trajectory_id)
        obs = await asyncio.gather(*(toolset.run_one(ctx, c.name, c.arguments, c.error) for c in item.calls))
        for call, o in zip(item.calls, obs):
            outcome = "ok" if o.ok else ("timeout" if o.metrics.get("timeout") else "error")
            metrics.inc("paravt_tool_calls_total", "Tool calls by tool and outcome.",
                        tool=str(call.name), outcome=outcome)
        return {"trajectory_id": item.trajectory_id, "observations": [observation_to_wire(o) for o in obs],
                "budget": budget_to_wire(ctx.budget)}

    async def run_batch(req: BatchRequest) -> list[dict[str, Any]]:
        async with slots["sem"]:
            state["inflight"] += 1
            try:
                return list(await asyncio.gather(*(run_item(i) for i in req.items)))
            finally:
                state["inflight"] -= 1

    @app.post("/v1/batch")
    async def batch(req: BatchRequest) -> JSONResponse:
        t0 = time.perf_counter()
        metrics.inc("paravt_tool_requests_total", "Batch requests received.")
        try:
            results = await asyncio.wait_for(run_batch(req), request_timeout_s)
        except asyncio.TimeoutError:
            metrics.inc("paravt_tool_request_timeouts_total", "Batch requests that exceeded request_timeout_s.")
            return JSONResponse({"error": f"request timed out after {request_timeout_s:g} s"}, status_code=504)
        except (ParavtError, KeyError, TypeError, ValueError) as exc:
            metrics.inc("paravt_tool_request_errors_total", "Batch requests that failed.")
            return JSONResponse({"error": f"bad request: {type(exc).__name__}: {exc}"}, status_code=400)
        finally:
            metrics.observe_latency(time.perf_counter() - t0)
        return JSONResponse({"results": results})

    @app.post("/v1/finish")
    async def finish(req: FinishRequest) -> dict[str, int]:
        for tid in req.trajectory_ids:
            await toolset.finish(_FinishCtx(tid))  # type: ignore[arg-type]
        return {"released": len(req.trajectory_ids)}

    @app.get("/v1/tools")
    async def tools() -> list[dict[str, Any]]:
        return [{"name": s.name, "description": s.description, "parameters": s.parameters,
                 "timeout_s": toolset.timeouts[s.name]} for s in toolset.specs]

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "tools": sorted(toolset.names), "isolation": isolation_mode(),
                "inflight": state["inflight"], "max_concurrency": max_concurrency}

    @app.get("/metrics")
    async def prometheus() -> PlainTextResponse:
        metrics.set_gauge("paravt_tool_inflight_requests", state["inflight"])
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    return app


class _FinishCtx:
    """Tools' ``finish`` only reads ``episode_id``."""

    def __init__(self, episode_id: str) -> None:
        self.episode_id = episode_id
