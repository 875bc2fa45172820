"""`paravt` command line: thin commands over library functions (STYLE.md §7).

Each command group lives in its own module and is registered here.
"""

from __future__ import annotations

import typer

from paravt.cli import config_cmd

app = typer.Typer(
    name="paravt",
    help="Agentic video RL with parallel tool use (ParaVT / PARA-GRPO).",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)

app.add_typer(config_cmd.app, name="config")


def main() -> None:  # pragma: no cover - console entry
    app()
