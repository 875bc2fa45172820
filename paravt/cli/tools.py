"""`paravt serve-tools`: run the HTTP tool server (docs/tools.md, "Tool server", "Threat model")."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from paravt.cli.output import fail, stderr_console
from paravt.config import ToolServerConfig, apply_override, dump, read_mapping, validate
from paravt.errors import ConfigError

console = stderr_console()


def _server_config(config: Optional[Path], flags: dict[str, object], overrides: list[str]) -> ToolServerConfig:
    data = read_mapping(config) if config is not None else {}
    data.update({k: v for k, v in flags.items() if v is not None})
    for item in overrides:
        apply_override(data, item)
    return validate(ToolServerConfig, data, str(config or "serve-tools flags"))


def serve_tools(
    host: str = typer.Option("127.0.0.1", help="Interface to bind (keep loopback unless the network is trusted)."),
    port: int = typer.Option(8765, help="TCP port."),
    tools: str = typer.Option("crop_video", help="Comma-separated tool names, e.g. crop_video,frame_select,python."),
    video_root: Optional[list[str]] = typer.Option(None, "--video-root", help="Directory whose files may be served (repeatable; default: the working directory)."),
    max_concurrency: Optional[int] = typer.Option(None, min=1, help="Batch requests served at once."),
    request_timeout_s: Optional[float] = typer.Option(None, min=0.001, help="Per-request timeout (504 after it)."),
    idle_ttl_s: Optional[float] = typer.Option(None, min=0.001, help="Release a trajectory's python runtime after this idle time."),
    max_runtimes: Optional[int] = typer.Option(None, min=1, help="Live python runtimes (LRU eviction beyond)."),
    max_calls_per_request: Optional[int] = typer.Option(None, min=1, help="Tool calls per batch request (413 beyond)."),
    max_body_bytes: Optional[int] = typer.Option(None, min=1024, help="Request body size (413 beyond)."),
    python_weak_isolation: bool = typer.Option(False, "--python-weak-isolation", help="Allow the python tool without bubblewrap (weak isolation)."),
    config: Optional[Path] = typer.Option(None, "--config", help="YAML of ToolServerConfig fields (flags win)."),
    set_: Optional[list[str]] = typer.Option(None, "--set", help="Override a ToolServerConfig field: key=value (repeatable)."),
    show_config: bool = typer.Option(False, "--show-config", help="Print the resolved ToolServerConfig as YAML and exit."),
) -> None:
    """Serve tools over HTTP for RemoteToolSet (`rollout.tool_server_url`)."""
    import uvicorn

    from paravt.tools.server.limits import uvicorn_config
    from paravt.tools.server.app import create_app

    names = [n.strip() for n in tools.split(",") if n.strip()]
    flags = {"video_roots": video_root or None, "max_concurrency": max_concurrency,
             "request_timeout_s": request_timeout_s, "idle_ttl_s": idle_ttl_s, "max_runtimes": max_runtimes,
             "max_calls_per_request": max_calls_per_request, "max_body_bytes": max_body_bytes,
             "python_weak_isolation": python_weak_isolation or None}
    try:
        cfg = _server_config(config, flags, list(set_ or []))
        if show_config:
            typer.echo(dump(cfg), nl=False)
            return
        app = create_app(names, cfg)
    except ConfigError as err:
        raise fail(str(err)) from None
    roots = ", ".join(app.state.video_roots)
    console.print(f"paravt tool server: {', '.join(names)} on http://{host}:{port}; video roots: {roots}")
    uvicorn.Server(uvicorn_config(app, host=host, port=port, header_timeout_s=cfg.header_timeout_s,
                                  max_connections=cfg.max_connections)).run()
