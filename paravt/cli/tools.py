"""`paravt serve-tools`: run the HTTP tool server (docs/tools.md, "Tool server", "Threat model")."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from paravt.cli.output import SET_HELP, stderr_console
from paravt.config import (
    Flag,
    ToolServerConfig,
    dump,
    read_mapping,
    require_key_beyond_loopback,
    resolve,
)

console = stderr_console()


# The command's options, declared once here so that the command reads as its parameters.
_Host = Annotated[
    str, typer.Option(help="Interface to bind (keep loopback unless the network is trusted).")
]
_Port = Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")]
_Tools = Annotated[
    str, typer.Option(help="Comma-separated tool names, e.g. crop_video,frame_select,python.")
]
_VideoRoot = Annotated[
    list[str] | None,
    typer.Option(
        "--video-root",
        help="Directory whose files may be served (repeatable; default: the working directory).",
    ),
]
_MaxConcurrency = Annotated[int | None, typer.Option(help="Batch requests served at once.")]
_RequestTimeout = Annotated[float | None, typer.Option(help="Per-request timeout (504 after it).")]
_IdleTtl = Annotated[
    float | None, typer.Option(help="Release a trajectory's python runtime after this idle time.")
]
_MaxRuntimes = Annotated[
    int | None, typer.Option(help="Live python runtimes (LRU eviction beyond).")
]
_MaxCalls = Annotated[int | None, typer.Option(help="Tool calls per batch request (413 beyond).")]
_MaxBody = Annotated[int | None, typer.Option(help="Request body size (413 beyond).")]
_WeakIsolation = Annotated[
    bool,
    typer.Option(
        "--python-weak-isolation", help="Allow the python tool without bubblewrap (weak isolation)."
    ),
]
_ApiKeyFile = Annotated[
    Path | None,
    typer.Option(
        "--api-key-file",
        help="File whose first line is the key every request must send as 'Authorization: Bearer "
        "KEY' (401 without it); required beyond loopback.",
    ),
]
_Config = Annotated[
    Path | None,
    typer.Option("--config", help="YAML of ToolServerConfig fields (--set, then flags, win)."),
]
_Set = Annotated[
    list[str] | None, typer.Option("--set", help=SET_HELP + " Keys are ToolServerConfig fields.")
]
_ShowConfig = Annotated[
    bool,
    typer.Option("--show-config", help="Print the resolved ToolServerConfig as YAML and exit."),
]


def serve_tools(
    host: _Host = "127.0.0.1",
    port: _Port = 8765,
    tools: _Tools = "crop_video",
    video_root: _VideoRoot = None,
    max_concurrency: _MaxConcurrency = None,
    request_timeout_s: _RequestTimeout = None,
    idle_ttl_s: _IdleTtl = None,
    max_runtimes: _MaxRuntimes = None,
    max_calls_per_request: _MaxCalls = None,
    max_body_bytes: _MaxBody = None,
    python_weak_isolation: _WeakIsolation = False,
    api_key_file: _ApiKeyFile = None,
    config: _Config = None,
    set_: _Set = None,
    show_config: _ShowConfig = False,
) -> None:
    """Serve tools over HTTP for RemoteToolSet (`rollout.tool_server_url`). Limits are
    ToolServerConfig
    fields (ranges checked there). Beyond loopback a key (--api-key-file) is required."""
    names = [n.strip() for n in tools.split(",") if n.strip()]
    flags = [
        Flag("--video-root", "video_roots", video_root or None),
        Flag("--max-concurrency", "max_concurrency", max_concurrency),
        Flag("--request-timeout-s", "request_timeout_s", request_timeout_s),
        Flag("--idle-ttl-s", "idle_ttl_s", idle_ttl_s),
        Flag("--max-runtimes", "max_runtimes", max_runtimes),
        Flag("--max-calls-per-request", "max_calls_per_request", max_calls_per_request),
        Flag("--max-body-bytes", "max_body_bytes", max_body_bytes),
        Flag("--python-weak-isolation", "python_weak_isolation", python_weak_isolation or None),
        Flag(
            "--api-key-file",
            "api_key_file",
            str(api_key_file) if api_key_file is not None else None,
        ),
    ]
    cfg = resolve(
        ToolServerConfig,
        read_mapping(config) if config is not None else {},
        str(config or "serve-tools flags"),
        set_ or [],
        flags,
    )
    if show_config:
        typer.echo(dump(cfg), nl=False)
        return
    require_key_beyond_loopback(host, cfg.api_key_file, "--api-key-file", "paravt serve-tools")
    _serve(names, cfg, host, port)


def _serve(names: list[str], cfg: ToolServerConfig, host: str, port: int) -> None:
    """Build the app for ``names`` and serve it until interrupted."""
    import uvicorn

    from paravt.tools.server.app import create_app
    from paravt.tools.server.limits import uvicorn_config

    app = create_app(names, cfg)
    roots = ", ".join(app.state.video_roots)
    who = "key required" if cfg.api_key_file is not None else "no key (loopback only)"
    console.print(
        f"paravt tool server: {', '.join(names)} on http://{host}:{port}; video roots: {roots}; "
        f"{who}"
    )
    uvicorn.Server(
        uvicorn_config(
            app,
            host=host,
            port=port,
            header_timeout_s=cfg.header_timeout_s,
            max_connections=cfg.max_connections,
        )
    ).run()
