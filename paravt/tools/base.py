"""The tool interface: `Tool`, `Observation`, `ToolContext`, `VisualBudget` (docs/tools.md).

A tool is an object with a ``name``, a ``spec`` (what the model sees: JSON-schema parameters), a
``timeout_s`` and an async ``run(ctx, args) -> Observation``. Model-caused failures (bad
arguments, a window outside the video, a broken file) are returned as ``Observation(error=...)``
or raised as `ToolCallError`, which the ToolSet turns into an error observation for that call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from paravt.config import VideoConfig
from paravt.errors import ToolCallError
from paravt.protocol.prompts import ToolSpec
from paravt.video.types import Frames, VideoInfo

Delivery = Literal["subagent", "inline", "text"]

_V = VideoConfig()  # the defaults, written once in config


@dataclass(frozen=True)
class Observation:
    """One call's result. ``error`` set → the call failed and ``text`` explains it to the model."""

    text: str = ""
    frames: Frames | None = None  # frames to show (crop_video / frame_select / python images)
    window: tuple[float, float] | None = None  # the (clamped) window actually served
    error: str | None = None
    delivery: Delivery = (
        "text"  # where frames go: "subagent" (crop_video, parallel mode) or "inline"
    )
    # (frame_select, python images, MCP images: into the tool turn); "text": no frames
    metrics: Mapping[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    @staticmethod
    def failure(message: str, *, window: tuple[float, float] | None = None) -> Observation:
        return Observation(text=f"Error: {message}", error=message, window=window)


@dataclass
class VisualBudget:
    """frame_select's pixel budget (EVA): cost of a call = nframes × resized H × W pixels.

    Defaults: ≤ 16 frames of 224×224 per call (802,816 px) and ≤ 64 such frames per episode
    (3,211,264 px). Mutable state owned by the episode (``used_pixels``, ``calls``).
    """

    per_call_pixels: int = 16 * 224 * 224
    per_episode_pixels: int = 64 * 224 * 224
    used_pixels: int = 0
    calls: int = 0

    @property
    def remaining(self) -> int:
        return max(0, self.per_episode_pixels - self.used_pixels)

    def affordable_frames(self, frame_pixels: int) -> int:
        """How many frames of ``frame_pixels`` this call may still take (per-call ∧ episode)."""
        return min(self.per_call_pixels, self.remaining) // max(1, frame_pixels)

    def charge(self, pixels: int) -> None:
        if pixels > min(self.per_call_pixels, self.remaining):
            raise ToolCallError(
                f"{pixels} px exceeds the visual budget "
                f"({self.remaining} px left this episode, {self.per_call_pixels} per call)"
            )
        self.used_pixels += pixels
        self.calls += 1


@dataclass
class ToolContext:
    """One per episode; the Episode owns it (budgets are mutated by the tools)."""

    episode_id: str
    video: str  # absolute path bound from the dataset; models never name files
    info: VideoInfo
    crop_max_frames: int = _V.crop_max_frames  # defaults: paravt.config.VideoConfig
    crop_fps: float = _V.crop_fps
    crop_max_pixels: int = _V.crop_max_pixels
    size_factor: int = _V.size_factor
    budget: VisualBudget = field(default_factory=VisualBudget)

    def clamp(self, start: float, end: float) -> tuple[float, float]:
        """The window clamped to [0, duration]; `ToolCallError` when nothing is left of it."""
        if not (math.isfinite(start) and math.isfinite(end)):
            raise ToolCallError(f"window [{start}, {end}] is not finite; give times in seconds")
        s, e = max(0.0, float(start)), min(float(self.info.duration), float(end))
        if not e > s:
            raise ToolCallError(
                f"window [{start:g}, {end:g}] s does not overlap the video "
                f"[0, {self.info.duration:g}] s; choose start < end inside it"
            )
        return s, e


@runtime_checkable
class Tool(Protocol):
    """What a tool implements (registered by name; third-party tools via entry points)."""

    name: str
    spec: ToolSpec
    timeout_s: float

    async def run(self, ctx: ToolContext, args: Mapping[str, Any]) -> Observation: ...


def number_arg(args: Mapping[str, Any], key: str, *, default: float | None = None) -> float:
    """A numeric argument; `ToolCallError` (value, rule, fix) when missing or not a number."""
    if key not in args or args[key] is None:
        if default is not None:
            return default
        raise ToolCallError(f"argument {key!r} is missing; pass it as a number")
    value = args[key]
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ToolCallError(f"argument {key}={value!r} is not a number; pass a number")
    try:
        if isinstance(value, str):
            from paravt.protocol.times import parse_time

            return float(parse_time(value))
        return float(value)
    except (ValueError, ToolCallError) as exc:
        raise ToolCallError(
            f"argument {key}={value!r} is not a number ({exc}); pass a number"
        ) from None


def window_text(frames: Frames, start: float, end: float) -> str:
    from paravt.protocol.tags import fmt_time

    return (
        f"{len(frames)} frames {frames.width}×{frames.height} from {fmt_time(start)} to "
        f"{fmt_time(end)}"
    )
