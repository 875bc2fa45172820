"""The tool server: `create_app` (FastAPI) behind ``paravt serve-tools`` (docs/tools.md).

Endpoints
- ``POST /v1/batch``: ``{"items": [{"session", "trajectory_id", "context", "calls": [{"name",
  "arguments", "error"}]}]}`` → ``{"results": [{"trajectory_id", "observations": [...], "budget":
  {...}}]}``, as JSON (frames in base64) or, when the request's ``Accept`` names
  ``application/x-paravt-frames``, as a binary body with the frames' raw bytes
  (`paravt.tools.server.wire`; errors stay JSON). Items run concurrently; calls of one item run as
  `LocalToolSet.run_calls` does. Send at most one item per trajectory per request (the budget state
  of an item is returned with
  it). ``session`` is the caller's random per-run nonce (≥ 16 characters): per-trajectory state is
  keyed
  by (session, trajectory_id), so two callers reusing an id never share a python runtime.
- ``POST /v1/finish``: ``{"session", "trajectory_ids": [...]}`` releases per-trajectory state
  (python runtimes); idle state is also released after ``idle_ttl_s``.
- ``GET /v1/tools``: the served tools' specs and timeouts. ``GET /health``. ``GET /metrics``.

Who may call: with ``api_key_file`` set, every request (all endpoints) must send ``Authorization:
Bearer <key>``; otherwise it gets 401 and nothing runs (`paravt.tools.server.auth`).

What a caller may ask (`ToolServerConfig`): the video must be a regular file under the video
roots (`paravt.tools.server.guard`); sampling caps and budgets are clamped to the server's; at most
``max_items_per_request`` items and ``max_calls_per_request`` calls per request (413); bodies are
bounded in size and time and headers in time (`paravt.tools.server.limits`: 413/408); connections
beyond ``max_connections`` get 503. Each batch request holds one of ``max_concurrency`` slots and
must finish within ``request_timeout_s`` (waiting for a slot included); otherwise it gets HTTP 504
and its slot is freed (running python code is killed; a decode already running in a worker thread
finishes in the background and its result is dropped).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, Field, ValidationError

from paravt.config import ToolServerConfig, read_key_file
from paravt.config.keys import MIN_SERVER_KEY_CHARS
from paravt.errors import ConfigError, ParavtError, ToolCallError
from paravt.tools.base import Observation
from paravt.tools.build import build_toolset
from paravt.tools.sandbox.isolation import WEAK_REFUSAL, isolation_mode
from paravt.tools.server.auth import BearerAuth
from paravt.tools.server.guard import ServerCaps, VideoRoots, clamp_context
from paravt.tools.server.limits import BodyLimit
from paravt.tools.server.metrics import Metrics
from paravt.tools.server.wire import (
    BINARY_TYPE,
    Buffers,
    budget_to_wire,
    context_from_wire,
    encode_binary,
    observation_to_wire,
)
from paravt.tools.toolset import LocalToolSet

Session = Annotated[str, Field(min_length=16, max_length=128, pattern=r"^[A-Za-z0-9_-]+$")]
TrajectoryId = Annotated[str, Field(min_length=1, max_length=256)]


class CallIn(BaseModel):
    name: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class BatchItem(BaseModel):
    session: Session  # the caller's random per-run nonce: runtimes are keyed by (session, id)
    trajectory_id: TrajectoryId
    context: dict[str, Any]
    calls: list[CallIn]


class BatchRequest(BaseModel):
    items: list[BatchItem]


class FinishRequest(BaseModel):
    session: Session
    trajectory_ids: list[TrajectoryId]


def _runtime_key(session: str, trajectory_id: str) -> str:
    return f"{session}/{trajectory_id}"


def _tool_options(names: Sequence[str], cfg: ToolServerConfig) -> dict[str, dict[str, Any]]:
    if "python" not in names:
        return {}
    if isolation_mode() != "bwrap" and not cfg.python_weak_isolation:
        raise ConfigError(WEAK_REFUSAL.format(mode=isolation_mode()))
    return {
        "python": {
            "idle_ttl_s": cfg.idle_ttl_s,
            "max_runtimes": cfg.max_runtimes,
            "weak_isolation": cfg.python_weak_isolation,
        }
    }


def _caps(cfg: ToolServerConfig) -> ServerCaps:
    return ServerCaps(
        crop_max_frames=cfg.max_crop_frames,
        crop_fps=cfg.max_crop_fps,
        crop_max_pixels=cfg.max_crop_pixels,
        size_factor=cfg.max_size_factor,
        call_pixels=cfg.max_call_pixels,
        episode_pixels=cfg.max_episode_pixels,
    )


def _brief(exc: ValidationError) -> str:
    errs = exc.errors(include_url=False, include_input=False)
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in errs[:5])[
        :1000
    ]


def _too_large(req: BatchRequest, cfg: ToolServerConfig) -> str | None:
    n_calls = sum(len(i.calls) for i in req.items)
    if len(req.items) > cfg.max_items_per_request:
        return (
            f"{len(req.items)} items in one request exceed "
            f"max_items_per_request={cfg.max_items_per_request}"
        )
    if n_calls > cfg.max_calls_per_request:
        return (
            f"{n_calls} calls in one request exceed "
            f"max_calls_per_request={cfg.max_calls_per_request}"
        )
    return None


class _Service:
    """The server's state and request handlers (``create_app`` routes to them)."""

    def __init__(self, toolset: LocalToolSet, cfg: ToolServerConfig) -> None:
        self.toolset, self.cfg = toolset, cfg
        self.roots, self.caps = VideoRoots(cfg.video_roots), _caps(cfg)
        self.metrics = Metrics()
        self.inflight = 0
        self.sem: asyncio.Semaphore | None = None  # made inside the server's event loop

    async def run_item(self, item: BatchItem, buffers: Buffers | None) -> dict[str, Any]:
        ctx = context_from_wire(
            item.context, episode_id=_runtime_key(item.session, item.trajectory_id)
        )
        clamp_context(ctx, self.caps)
        try:
            ctx.video = self.roots.resolve(ctx.video)
        except ToolCallError as exc:
            self.metrics.inc(
                "paravt_tool_refused_videos_total", "Items whose video is outside the video roots."
            )
            obs = [Observation.failure(str(exc)) for _ in item.calls]
        else:
            obs = await asyncio.gather(
                *(self.toolset.run_one(ctx, c.name, c.arguments, c.error) for c in item.calls)
            )
        for call, o in zip(item.calls, obs):
            outcome = "ok" if o.ok else ("timeout" if o.metrics.get("timeout") else "error")
            self.metrics.inc(
                "paravt_tool_calls_total",
                "Tool calls by tool and outcome.",
                tool=str(call.name),
                outcome=outcome,
            )
        return {
            "trajectory_id": item.trajectory_id,
            "observations": [observation_to_wire(o, buffers) for o in obs],
            "budget": budget_to_wire(ctx.budget),
        }

    async def run_batch(self, req: BatchRequest, buffers: Buffers | None) -> list[dict[str, Any]]:
        assert self.sem is not None
        async with self.sem:
            self.inflight += 1
            try:
                return list(await asyncio.gather(*(self.run_item(i, buffers) for i in req.items)))
            finally:
                self.inflight -= 1

    async def batch(self, request: Request) -> Response:
        """The body is validated here by pydantic-core in one pass (``model_validate_json``), not by
        FastAPI's per-field machinery: same 422 on a malformed body, a fraction of the CPU."""
        cfg, metrics = self.cfg, self.metrics
        t0 = time.perf_counter()
        metrics.inc("paravt_tool_requests_total", "Batch requests received.")
        try:
            req = BatchRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            metrics.inc("paravt_tool_request_errors_total", "Batch requests that failed.")
            return JSONResponse(
                {"error": f"malformed batch request: {_brief(exc)}"}, status_code=422
            )
        buffers: Buffers | None = [] if BINARY_TYPE in request.headers.get("accept", "") else None
        if (too_large := _too_large(req, cfg)) is not None:
            metrics.inc("paravt_tool_request_errors_total", "Batch requests that failed.")
            return JSONResponse({"error": too_large}, status_code=413)
        try:
            results = await asyncio.wait_for(self.run_batch(req, buffers), cfg.request_timeout_s)
        except TimeoutError:
            metrics.inc(
                "paravt_tool_request_timeouts_total",
                "Batch requests that exceeded request_timeout_s.",
            )
            return JSONResponse(
                {"error": f"request timed out after {cfg.request_timeout_s:g} s"}, status_code=504
            )
        except (ParavtError, KeyError, TypeError, ValueError) as exc:
            metrics.inc("paravt_tool_request_errors_total", "Batch requests that failed.")
            return JSONResponse(
                {"error": f"bad request: {type(exc).__name__}: {exc}"}, status_code=400
            )
        finally:
            metrics.observe_latency(time.perf_counter() - t0)
        if (
            buffers is not None
        ):  # frames as raw bytes after a JSON header (paravt.tools.server.wire)
            return Response(encode_binary({"results": results}, buffers), media_type=BINARY_TYPE)
        return JSONResponse({"results": results})

    async def finish(self, req: FinishRequest) -> dict[str, int]:
        for tid in req.trajectory_ids:
            await self.toolset.finish(_FinishCtx(_runtime_key(req.session, tid)))  # type: ignore[arg-type]
        return {"released": len(req.trajectory_ids)}

    async def tools(self) -> list[dict[str, Any]]:
        return [
            {
                "name": s.name,
                "description": s.description,
                "parameters": s.parameters,
                "timeout_s": self.toolset.timeouts[s.name],
            }
            for s in self.toolset.specs
        ]

    async def health(self) -> dict[str, Any]:
        return {
            "status": "ok",
            "tools": sorted(self.toolset.names),
            "isolation": isolation_mode(),
            "inflight": self.inflight,
            "max_concurrency": self.cfg.max_concurrency,
        }

    async def prometheus(self) -> PlainTextResponse:
        self.metrics.set_gauge("paravt_tool_inflight_requests", self.inflight)
        return PlainTextResponse(self.metrics.render(), media_type="text/plain; version=0.0.4")


def create_app(
    names: Sequence[str],
    config: ToolServerConfig | None = None,
    *,
    timeouts: dict[str, float] | None = None,
) -> FastAPI:
    """A tool server for the tools ``names`` (unknown names, missing video roots, python without
    bubblewrap and without the weak-isolation opt-in, or an unreadable key file raise `ConfigError`
    now). With ``api_key_file`` every request must carry its key (`paravt.tools.server.auth`)."""
    cfg = config or ToolServerConfig()
    key = (
        read_key_file(
            cfg.api_key_file, "api_key_file (--api-key-file)", min_chars=MIN_SERVER_KEY_CHARS
        )
        if cfg.api_key_file is not None
        else None
    )
    toolset = build_toolset(list(names), timeouts=timeouts, options=_tool_options(names, cfg))
    assert isinstance(toolset, LocalToolSet)
    svc = _Service(toolset, cfg)

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        svc.sem = asyncio.Semaphore(cfg.max_concurrency)
        yield
        await toolset.aclose()

    app = FastAPI(title="paravt tool server", lifespan=lifespan)
    app.add_middleware(_BatchFastPath, service=svc)  # inside BodyLimit: every limit still applies
    app.add_middleware(
        BodyLimit, max_body_bytes=cfg.max_body_bytes, body_timeout_s=cfg.body_timeout_s
    )
    if key is not None:  # outermost: a request without the key reaches nothing else
        app.add_middleware(
            BearerAuth,
            key=key,
            on_refused=lambda: svc.metrics.inc(
                "paravt_tool_unauthorized_total",
                "Requests refused for a missing or wrong API key (401).",
            ),
        )
    app.state.toolset, app.state.metrics, app.state.config = toolset, svc.metrics, cfg
    app.state.video_roots = svc.roots.roots
    app.post(
        "/v1/batch",
        openapi_extra={
            "requestBody": {
                "content": {"application/json": {"schema": BatchRequest.model_json_schema()}}
            }
        },
    )(svc.batch)
    app.post("/v1/finish")(svc.finish)
    app.get("/v1/tools")(svc.tools)
    app.get("/health")(svc.health)
    app.get("/metrics")(svc.prometheus)
    return app


class _BatchFastPath:
    """ASGI middleware: ``POST /v1/batch`` goes straight to `_Service.batch` (which validates and
    answers every case itself) instead of through FastAPI's routing and dependency machinery,
    the largest per-request cost of the server after the tools; other requests pass on."""

    def __init__(self, app: Any, *, service: _Service) -> None:
        self.app, self.service = app, service

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == "/v1/batch":
            response = await self.service.batch(Request(scope, receive))
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class _FinishCtx:
    """Tools' ``finish`` only reads ``episode_id``."""

    def __init__(self, episode_id: str) -> None:
        self.episode_id = episode_id
