"""What the tool server accepts from a remote caller's tool context (docs/tools.md, "Threat model").

- `VideoRoots.resolve`: the client names the video by path; the server serves it only when the
  path, with every symlink and ``..`` resolved, is a regular file under one of its roots. Every
  refusal has the same text, so a caller learns nothing about paths outside the roots (not their
  existence, type or size).
- `clamp_context`: frame counts, rates, pixels and visual budgets sent by the client are capped
  by the server's own limits (`ServerCaps`), and budget counters cannot go negative.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from paravt.errors import ToolCallError
from paravt.tools.base import ToolContext

REFUSED = (
    "video {path!r} is not a readable regular file under the tool server's video roots; "
    "start the server with --video-root covering it"
)


class VideoRoots:
    """The directories whose regular files may be served (resolved once, at startup)."""

    def __init__(self, roots: Sequence[str]) -> None:
        paths = [os.path.realpath(r) for r in (roots or [os.getcwd()])]
        missing = [r for r in paths if not os.path.isdir(r)]
        if missing:
            from paravt.errors import ConfigError

            raise ConfigError(
                f"video root(s) {missing} are not directories; pass existing directories to "
                "--video-root"
            )
        self.roots = tuple(paths)

    def contains(self, real: str) -> bool:
        return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in self.roots)

    def resolve(self, path: object) -> str:
        """The real path of ``path`` if it is a readable regular file under a root; otherwise
        `ToolCallError` with one fixed text (no oracle on anything outside the roots)."""
        if not isinstance(path, str) or not path or "\x00" in path:
            raise ToolCallError(REFUSED.format(path=str(path)[:200]))
        real = os.path.realpath(path)
        if not self.contains(real):
            raise ToolCallError(REFUSED.format(path=path[:200]))
        try:
            st = os.stat(real)
            readable = os.access(real, os.R_OK)
        except (OSError, ValueError):
            raise ToolCallError(REFUSED.format(path=path[:200])) from None
        if not stat.S_ISREG(st.st_mode) or not readable:
            raise ToolCallError(REFUSED.format(path=path[:200]))
        return real


@dataclass(frozen=True)
class ServerCaps:
    """The server's upper bounds on what a client may ask for."""

    crop_max_frames: int
    crop_fps: float
    crop_max_pixels: int
    size_factor: int
    call_pixels: int
    episode_pixels: int


def _capped(value: object, cap: float, floor: float) -> float:
    v = float(value)  # type: ignore[arg-type]  # ValueError/TypeError → 400 bad request
    return cap if not math.isfinite(v) else max(floor, min(v, cap))


def clamp_context(ctx: ToolContext, caps: ServerCaps) -> None:
    """Cap the client's sampling limits and budget (in place) by the server's."""
    ctx.crop_max_frames = int(_capped(ctx.crop_max_frames, caps.crop_max_frames, 1))
    ctx.crop_fps = _capped(ctx.crop_fps, caps.crop_fps, 1e-3)
    ctx.crop_max_pixels = int(_capped(ctx.crop_max_pixels, caps.crop_max_pixels, 16))
    ctx.size_factor = int(_capped(ctx.size_factor, caps.size_factor, 1))
    b = ctx.budget
    b.per_call_pixels = int(_capped(b.per_call_pixels, caps.call_pixels, 0))
    b.per_episode_pixels = int(_capped(b.per_episode_pixels, caps.episode_pixels, 0))
    b.used_pixels = int(_capped(b.used_pixels, b.per_episode_pixels, 0))
    b.calls = int(_capped(b.calls, 1e12, 0))
