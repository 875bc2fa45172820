"""`paravt config show|check`."""

from __future__ import annotations

from pathlib import Path

import typer

from paravt import config as cfgmod
from paravt.cli.output import stdout_console

app = typer.Typer(help="Show or validate configuration files.", no_args_is_help=True)
console = stdout_console()


@app.command("show")
def show(
    path: Path | None = typer.Argument(None, help="A YAML config; omitted: the defaults."),
) -> None:
    """Print the resolved config (every field, defaults included) as YAML, each field with its
    description as a comment (which flag sets it, what it does)."""
    from paravt.config.explain import explained

    cfg = cfgmod.load(path) if path else cfgmod.TrainConfig()
    typer.echo(explained(cfg), nl=False)


@app.command("check")
def check(path: Path) -> None:
    """Validate a YAML config; exit 2 with every bad field listed."""
    cfgmod.load(path)
    console.print(f"[green]{path}: ok[/green]")
