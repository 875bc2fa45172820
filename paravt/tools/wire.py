"""JSON wire format shared by the tool server and `RemoteToolSet`.

Frames travel as base64 of the raw uint8 array with its shape and exact timestamps (not JPEG), so
a remote observation is bit-identical to the local one. Floats go through JSON's shortest repr,
which round-trips exactly.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from paravt.errors import ToolCallError
from paravt.tools.base import Observation, ToolContext, VisualBudget
from paravt.video.types import Frames, VideoInfo

MAX_FRAME_BYTES = 512 << 20


def frames_to_wire(frames: Frames | None) -> dict[str, Any] | None:
    if frames is None:
        return None
    arr = np.ascontiguousarray(frames.array, dtype=np.uint8)
    return {"shape": list(arr.shape), "dtype": "uint8", "timestamps": list(frames.timestamps),
            "data": base64.b64encode(arr.tobytes()).decode("ascii")}


def frames_from_wire(d: Mapping[str, Any] | None) -> Frames | None:
    if d is None:
        return None
    shape = tuple(int(x) for x in d["shape"])
    if d.get("dtype") != "uint8" or len(shape) != 4 or shape[3] != 3 or int(np.prod(shape)) > MAX_FRAME_BYTES:
        raise ToolCallError(f"frames on the wire have shape {shape} / dtype {d.get('dtype')}; expected uint8 T×H×W×3")
    arr = np.frombuffer(base64.b64decode(d["data"]), dtype=np.uint8).reshape(shape)
    return Frames(arr, tuple(float(t) for t in d["timestamps"]))


def observation_to_wire(obs: Observation) -> dict[str, Any]:
    return {"text": obs.text, "frames": frames_to_wire(obs.frames),
            "window": list(obs.window) if obs.window is not None else None, "error": obs.error,
            "delivery": obs.delivery, "metrics": {k: float(v) for k, v in obs.metrics.items()}}


def observation_from_wire(d: Mapping[str, Any]) -> Observation:
    window = d.get("window")
    return Observation(text=str(d.get("text", "")), frames=frames_from_wire(d.get("frames")),
                       window=(float(window[0]), float(window[1])) if window is not None else None,
                       error=d.get("error"), delivery=d.get("delivery", "text"),
                       metrics={str(k): float(v) for k, v in (d.get("metrics") or {}).items()})


def budget_to_wire(b: VisualBudget) -> dict[str, int]:
    return dataclasses.asdict(b)


def apply_budget(ctx: ToolContext, d: Mapping[str, Any]) -> None:
    """Copy the server's budget state back into the episode's context (in place)."""
    ctx.budget.used_pixels = int(d["used_pixels"])
    ctx.budget.calls = int(d["calls"])


def context_to_wire(ctx: ToolContext) -> dict[str, Any]:
    d = {f.name: getattr(ctx, f.name) for f in dataclasses.fields(ctx) if f.name not in ("info", "budget")}
    d["info"] = dataclasses.asdict(ctx.info)
    d["budget"] = budget_to_wire(ctx.budget)
    return d


def context_from_wire(d: Mapping[str, Any], *, episode_id: str | None = None) -> ToolContext:
    fields = {f.name for f in dataclasses.fields(ToolContext)} - {"info", "budget"}
    kwargs = {k: d[k] for k in fields if k in d}
    if episode_id is not None:
        kwargs["episode_id"] = episode_id
    return ToolContext(info=VideoInfo(**d["info"]), budget=VisualBudget(**d.get("budget", {})), **kwargs)
