"""`paravt serve-tools`: run the HTTP tool server (docs/tools.md)."""

from __future__ import annotations

import typer

from paravt.errors import ConfigError
from paravt.cli.output import fail, stderr_console

console = stderr_console()


def serve_tools(
    host: str = typer.Option("127.0.0.1", help="Interface to bind (keep loopback unless the network is trusted)."),
    port: int = typer.Option(8765, help="TCP port."),
    tools: str = typer.Option("crop_video", help="Comma-separated tool names, e.g. crop_video,frame_select,python."),
    max_concurrency: int = typer.Option(64, min=1, help="Batch requests served at once."),
    request_timeout_s: float = typer.Option(120.0, min=0.001, help="Per-request timeout (504 after it)."),
    idle_ttl_s: float = typer.Option(300.0, min=0.001, help="Release a trajectory's python runtime after this idle time."),
) -> None:
    """Serve tools over HTTP for RemoteToolSet (`rollout.tool_server_url`)."""
    import uvicorn

    from paravt.tools.server import create_app

    names = [n.strip() for n in tools.split(",") if n.strip()]
    try:
        app = create_app(names, max_concurrency=max_concurrency, request_timeout_s=request_timeout_s,
                         idle_ttl_s=idle_ttl_s)
    except ConfigError as err:
        raise fail(str(err)) from None
    console.print(f"paravt tool server: {', '.join(names)} on http://{host}:{port}")
    uvicorn.run(app, host=host, port=port, log_level="warning")
