"""One exception family for the whole package.

Model output is *data*: a malformed tool call or a failed tool becomes a result record, never an
exception. These errors are for bad inputs from the user (config, files, arguments) and for
infrastructure failures. Every message says what was wrong, which rule it broke, and how to fix it,
on one line: the command line prints it as is (``paravt.cli.root``, exit status 2), so commands
never catch these errors themselves.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class ParavtError(Exception):
    """Base class of every error paravt raises on purpose."""


class ConfigError(ParavtError):
    """A configuration file or value is invalid (the message names every bad field)."""


class VideoError(ParavtError):
    """A video cannot be opened, probed or decoded, or a window does not fit the video."""


class ToolCallError(ParavtError):
    """A tool call is malformed or violates a limit (used inside tools; surfaced as data)."""


class ModelError(ParavtError):
    """A model cannot be loaded, or an inference backend failed after its retries."""


class DataError(ParavtError):
    """A dataset file or row does not follow the schema."""


class TrainingError(ParavtError):
    """A training run cannot go on: a step left the loss or the parameters non-finite (the message
    names the step, the likely knob and the checkpoint a resume uses; nothing broken is saved)."""


class TrackerError(ParavtError):
    """An experiment tracker (wandb, MLflow, TensorBoard) failed or passed its deadline
    (``logging.tracker_timeout_s``); ``train_log.jsonl`` holds every step logged so far."""


class Interrupted(BaseException):  # noqa: N818 - like KeyboardInterrupt, not an error
    """SIGTERM arrived during training: the trackers flushed and ended their runs (KILLED); the
    command line exits 128 + the signal's number (143)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum


class DiskError(ParavtError):
    """A write failed for want of space or permission (ENOSPC, EDQUOT, EACCES, EPERM, EROFS), or its
    path is a directory; the message names the path and what was kept (``disk_write``)."""


#: The errnos of a write that the user fixes (space, quota, permission, a read-only filesystem).
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS})
_DISK_FIX = {
    errno.ENOSPC: "free space or choose another disk",
    errno.EDQUOT: "free space or raise the quota",
    errno.EROFS: "the filesystem is read-only; choose a writable path",
}
_OS_ERROR_IN_TEXT = re.compile(r"\(os error (\d+)\)")  # safetensors' IoError text


def disk_cause(err: BaseException) -> OSError | None:
    """The space/permission OSError behind ``err``, if any: ``err`` itself, one in its
    ``__cause__``/``__context__`` chain (torch.save into an open file), or one a library only
    quotes in its message (safetensors: "... (os error 28)")."""
    seen: set[int] = set()
    e: BaseException | None = err
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in DISK_ERRNOS:
            return e
        m = _OS_ERROR_IN_TEXT.search(str(e)) if not isinstance(e, OSError) else None
        if m and int(m.group(1)) in DISK_ERRNOS:
            return OSError(int(m.group(1)), os.strerror(int(m.group(1))))
        e = e.__cause__ or e.__context__
    return None


@contextmanager
def disk_write(
    path: str | os.PathLike[str], what: str, kept: str | Callable[[], str]
) -> Iterator[None]:
    """Run a write of ``what`` at ``path``; a failure for want of space or permission becomes ONE
    `DiskError` naming the path, the reason, ``kept`` (what is still there; a callable is asked only
    on failure) and the fix. Any other error passes through unchanged."""
    try:
        yield
    except Exception as err:  # sorted by disk_cause; everything else is re-raised
        cause = disk_cause(err)
        if cause is None:
            raise
        keep = kept() if callable(kept) else kept
        reason = cause.strerror or os.strerror(cause.errno or 0)
        fix = _DISK_FIX.get(cause.errno or 0, "check the permissions or choose another path")
        raise DiskError(
            f"cannot write {what} {os.fspath(path)}: {reason}; kept: {keep}; {fix}, then run "
            "the command again"
        ) from None
