"""Why a path is not a usable video, in words a user can act on (docs/reliability.md, "Bad rows and
videos"): the ONE place that tells a missing file from a symlink loop, a FIFO, a device or a
directory (all used to be reported as "does not exist"), and a video too short for the processor.

- ``file_problem``: ``os.stat`` (following symlinks) says what is at the path; only a regular,
  non-empty file can be a video. A FIFO is never opened (opening one blocks until a writer comes).
- ``too_short``: fewer than ``MIN_FRAMES`` frames. The supported processors (Qwen2.5-VL, Qwen3-VL)
  merge ``temporal_patch_size`` = 2 consecutive frames into one patch: a 1-frame video gives no
  visual token at all (it used to run every episode blind, with no error).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from paravt.video.types import VideoInfo

#: Fewest frames of a usable video: one temporal patch of the supported processors.
MIN_FRAMES = 2

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_problem(path: str | Path) -> tuple[bool, str] | None:
    """``(missing, why)`` when ``path`` cannot be a video file, None when it can; ``missing`` is
    True only when nothing is there (a dangling symlink included). ``why`` completes "video X …"."""
    p = str(path)
    link = f" (a symlink to {os.readlink(p)!r})" if os.path.islink(p) else ""
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return True, f"does not exist{link}"
    except OSError as err:
        if err.errno == errno.ELOOP:
            return False, "is a symlink loop (too many levels of symbolic links)"
        return False, f"cannot be opened: {err.strerror}"
    for is_kind, kind in _KINDS:
        if is_kind(st.st_mode):
            return False, f"is {kind}{link}, not a regular file"
    if not stat.S_ISREG(st.st_mode):
        return False, f"is not a regular file{link}"
    if st.st_size == 0:
        return False, f"is empty (0 bytes){link}"
    return None


def too_short(info: VideoInfo) -> str | None:
    """Why the video of ``info`` has too few frames for a visual token (None when it has enough);
    completes "video X …"."""
    if info.num_frames >= MIN_FRAMES:
        return None
    return (
        f"has {info.num_frames} frame{'s' * (info.num_frames != 1)}; the processor needs at least "
        f"{MIN_FRAMES} (one temporal patch) for any visual token"
    )
