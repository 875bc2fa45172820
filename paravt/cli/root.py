"""The ONE error handler of the command line: every user error becomes one line on stderr.

``RootGroup`` is the click group of the ``paravt`` app, so every command (and every test that runs
the app through ``typer.testing.CliRunner``) goes through ``invoke`` below. What it turns into one
line naming the input and ending with the fix (exit 2):

- the ``ParavtError`` family (their messages name the value and the fix);
- pydantic ``ValidationError`` raised outside ``paravt.config.validate``;
- ``OSError`` about the user's input: one that names a path (missing, a file where a directory is
  needed, no permission), or a full disk, a read-only filesystem, a port in use (``_OS_FIX``); a
  timeout, a refused connection or a broken pipe inside paravt's own networking is a bug;
- a library's error whose cause is a full disk or a refused write (torch.save's RuntimeError over
  an ENOSPC, safetensors' "os error 28": ``paravt.errors.disk_cause``); the writes of checkpoints,
  results and reports say more (``paravt.errors.disk_write``: the path and what was kept);
- YAML errors, text files that are not UTF-8;
- click usage errors (an option out of its range, a missing option): one line instead of a box.

Anything else is a bug in paravt: it is said as such, with the traceback, exit 1. Commands do
not catch these errors themselves (no per-command ``try/except`` copies).
"""

from __future__ import annotations

import errno
import traceback
from typing import Any

import typer
import yaml
from pydantic import ValidationError
from typer.core import TyperGroup

from paravt.cli.output import stderr_console
from paravt.config import validation_message
from paravt.errors import Interrupted, ParavtError, disk_cause

#: Exit status of a user error (bad input, usage) and of a bug in paravt.
USER_ERROR, INTERNAL_ERROR = 2, 1

_REPORT = (
    "internal error in paravt: please report it with the command line and the traceback "
    "below (this is a bug, not a problem with your input)"
)


class RootGroup(TyperGroup):
    """The ``paravt`` group: runs the command, turns user errors into one line (see module doc)."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise  # a command's own exit status
        except Interrupted as err:
            _line(f"stopped by signal {err.signum}; the trackers were flushed; --resume continues")
            raise typer.Exit(128 + err.signum) from None
        except Exception as err:  # noqa: BLE001 - the one place that sorts every error
            if _is(err, "NoArgsIsHelpError"):
                raise  # a bare group: its help is shown
            if _is(err, "UsageError"):
                command = getattr(err.ctx, "command_path", None) or ctx.command_path  # type: ignore[attr-defined]
                _line(f"{command}: {_usage_message(err)}; see `{command} --help`")
                raise typer.Exit(USER_ERROR) from None
            message = user_message(err)
            if message is None:
                stderr_console().print(_REPORT, style="red", markup=False, highlight=False)
                traceback.print_exc()
                raise typer.Exit(INTERNAL_ERROR) from None
            _line(message)
            raise typer.Exit(USER_ERROR) from None


def _usage_message(err: Exception) -> str:
    """click's message, with the value given when typer checked it with pydantic (its message
    names the rule but not the value)."""
    message = err.format_message().rstrip(".")  # type: ignore[attr-defined]
    cause = err.__cause__
    if isinstance(cause, ValidationError) and cause.errors():
        message += f" (got {cause.errors()[0].get('input')})"
    return message


def _is(err: BaseException, name: str) -> bool:
    """``err`` is click's ``name`` exception (by name: typer ships its own copy of click)."""
    return any(c.__name__ == name for c in type(err).__mro__)


def user_message(err: BaseException) -> str | None:
    """The one-line message of a user error; None for anything else (a bug)."""
    if isinstance(err, ParavtError):
        return _one_line(str(err))
    if isinstance(err, ValidationError):
        return validation_message(err, err.title)
    if _is(err, "ClickException"):
        return _one_line(err.format_message())  # type: ignore[attr-defined]
    if isinstance(err, OSError) and (err.filename is not None or err.errno in _OS_FIX):
        return os_message(err)  # the rest (TimeoutError, ConnectionRefusedError, ...): a bug
    if (cause := disk_cause(err)) is not None:
        return os_message(cause)  # a library's wrapper of a write that found no space or permission
    if isinstance(err, yaml.YAMLError):
        return f"invalid YAML: {_one_line(str(err))}; fix the syntax"
    if isinstance(err, UnicodeDecodeError):
        return (
            f"an input file is not UTF-8 text ({err.reason} at byte {err.start}); save it as UTF-8"
        )
    return None


#: The errnos that are the user's to fix even when the error names no path (with one, any errno is).
_OS_FIX = {
    errno.ENOENT: "check the path",
    errno.EACCES: "check its permissions or choose another path",
    errno.EPERM: "check its permissions or choose another path",
    errno.ENOTDIR: "a part of the path is a file; choose a path under a directory",
    errno.EEXIST: "it exists and is not a directory; choose another path",
    errno.EISDIR: "pass a file, not a directory",
    errno.EROFS: "the filesystem is read-only; choose a writable path",
    errno.ENOSPC: "the disk is full; free space or choose another disk",
    errno.EADDRINUSE: "another process holds it; stop that process or choose another port",
}


def os_message(err: OSError) -> str:
    """``cannot use PATH: REASON; FIX`` for an OSError (the path when it has one)."""
    what = (
        " and ".join(str(f) for f in (err.filename, err.filename2) if f is not None)
        or "a system resource"
    )
    reason = err.strerror or str(err) or type(err).__name__
    return (
        f"cannot use {what}: {reason}; "
        f"{_OS_FIX.get(err.errno or 0, 'check the path and try again')}"
    )


def _one_line(text: str) -> str:
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def _line(message: str) -> None:
    stderr_console().print(message, style="red", markup=False, highlight=False)
