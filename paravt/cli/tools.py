"""`paravt serve-tools`: run the HTTP tool server (docs/tools.md, "Tool server", "Threat model")."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from paravt.cli.output import SET_HELP, stderr_console
from paravt.config import Flag, ToolServerConfig, dump, read_mapping, require_key_beyond_loopback, resolve

console = stderr_console()


def serve_tools(
    host: str = typer.Option("127.0.0.1", help="Interface to bind (keep loopback unless the network is trusted)."),
    port: int = typer.Option(8765, min=1, max=65535, help="TCP port."),
    tools: str = typer.Option("crop_video", help="Comma-separated tool names, e.g. crop_video,frame_select,python."),
    video_root: Optional[list[str]] = typer.Option(None, "--video-root", help="Directory whose files may be served (repeatable; default: the working directory)."),
    max_concurrency: Optional[int] = typer.Option(None, help="Batch requests served at once."),
    request_timeout_s: Optional[float] = typer.Option(None, help="Per-request timeout (504 after it)."),
    idle_ttl_s: Optional[float] = typer.Option(None, help="Release a trajectory's python runtime after this idle time."),
    max_runtimes: Optional[int] = typer.Option(None, help="Live python runtimes (LRU eviction beyond)."),
    max_calls_per_request: Optional[int] = typer.Option(None, help="Tool calls per batch request (413 beyond)."),
    max_body_bytes: Optional[int] = typer.Option(None, help="Request body size (413 beyond)."),
    python_weak_isolation: bool = typer.Option(False, "--python-weak-isolation", help="Allow the python tool without bubblewrap (weak isolation)."),
    api_key_file: Optional[Path] = typer.Option(None, "--api-key-file", help="File whose first line is the key every request must send as 'Authorization: Bearer KEY' (401 without it); required beyond loopback."),
    config: Optional[Path] = typer.Option(None, "--config", help="YAML of ToolServerConfig fields (--set, then flags, win)."),
    set_: Optional[list[str]] = typer.Option(None, "--set", help=SET_HELP + " Keys are ToolServerConfig fields."),
    show_config: bool = typer.Option(False, "--show-config", help="Print the resolved ToolServerConfig as YAML and exit."),
) -> None:
    """Serve tools over HTTP for RemoteToolSet (`rollout.tool_server_url`). Limits are ToolServerConfig
    fields (ranges checked there). Beyond loopback a key (--api-key-file) is required."""
    import uvicorn

    from paravt.tools.server.app import create_app
    from paravt.tools.server.limits import uvicorn_config

    names = [n.strip() for n in tools.split(",") if n.strip()]
    flags = [Flag("--video-root", "video_roots", video_root or None),
             Flag("--max-concurrency", "max_concurrency", max_concurrency),
             Flag("--request-timeout-s", "request_timeout_s", request_timeout_s),
             Flag("--idle-ttl-s", "idle_ttl_s", idle_ttl_s), Flag("--max-runtimes", "max_runtimes", max_runtimes),
             Flag("--max-calls-per-request", "max_calls_per_request", max_calls_per_request),
             Flag("--max-body-bytes", "max_body_bytes", max_body_bytes),
             Flag("--python-weak-isolation", "python_weak_isolation", python_weak_isolation or None),
             Flag("--api-key-file", "api_key_file", str(api_key_file) if api_key_file is not None else None)]
    cfg = resolve(ToolServerConfig, read_mapping(config) if config is not None else {},
                  str(config or "serve-tools flags"), set_ or [], flags)
    if show_config:
        typer.echo(dump(cfg), nl=False)
        return
    require_key_beyond_loopback(host, cfg.api_key_file, "--api-key-file", "paravt serve-tools")
    app = create_app(names, cfg)
    roots = ", ".join(app.state.video_roots)
    who = "key required" if cfg.api_key_file is not None else "no key (loopback only)"
    console.print(f"paravt tool server: {', '.join(names)} on http://{host}:{port}; video roots: {roots}; {who}")
    uvicorn.Server(uvicorn_config(app, host=host, port=port, header_timeout_s=cfg.header_timeout_s,
                                  max_connections=cfg.max_connections)).run()
