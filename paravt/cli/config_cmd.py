"""`paravt config show|check`."""

from __future__ import annotations

from pathlib import Path

import typer

from paravt import config as cfgmod
from paravt.errors import ConfigError
from paravt.cli.output import fail, stdout_console

app = typer.Typer(help="Show or validate configuration files.", no_args_is_help=True)
console = stdout_console()


@app.command("show")
def show(path: Path | None = typer.Argument(None, help="A YAML config; omitted: the defaults.")) -> None:
    """Print the resolved config (every field, defaults included) as YAML."""
    try:
        cfg = cfgmod.load(path) if path else cfgmod.TrainConfig()
    except ConfigError as err:
        raise fail(str(err)) from None
    typer.echo(cfgmod.dump(cfg), nl=False)


@app.command("check")
def check(path: Path) -> None:
    """Validate a YAML config; exit 2 with every bad field listed."""
    try:
        cfgmod.load(path)
    except ConfigError as err:
        raise fail(str(err)) from None
    console.print(f"[green]{path}: ok[/green]")
