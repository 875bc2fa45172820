"""Output conventions of every command: results on stdout, messages and errors on stderr.

- stdout holds only results (JSON lines, tables a user asked for), so ``--json`` output stays
  parseable; every error message goes to stderr as one line: a command raises a ``ParavtError``
  (paravt.cli.root prints it, exit 2) or, for a message of its own, ``fail`` (no traceback).
- Nothing is hard-wrapped when the stream is not a terminal: a path or a JSON line piped to a file
  or a log stays on one line (rich would otherwise wrap at 80 columns).
"""

from __future__ import annotations

import typer
from rich.console import Console

#: Width for tables when the stream is a file or a pipe (text is never wrapped there).
PIPE_WIDTH = 200

#: Help of every command's ``--set`` option (one override syntax: ``paravt.config.apply_override``).
SET_HELP = (
    "Override one setting: key.sub=value, the value in YAML (repeatable; `paravt config "
    "show` lists the keys)."
)


def _console(*, stderr: bool) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal:
        console.soft_wrap = True
        console.width = PIPE_WIDTH
    return console


def stdout_console() -> Console:
    """Results: tables and lines a command prints as its output."""
    return _console(stderr=False)


def stderr_console() -> Console:
    """Progress, notes, warnings and errors."""
    return _console(stderr=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``message`` on stderr (red on a terminal, never wrapped) and return the ``Exit`` to
    raise: ``raise fail(f"cannot read {path}: {err}") from None``."""
    stderr_console().print(message, style="red", markup=False, highlight=False)
    return typer.Exit(code)


def note(message: str) -> None:
    """A dim informational line on stderr (settings used, files written)."""
    stderr_console().print(message, style="dim", markup=False, highlight=False)
