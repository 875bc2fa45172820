"""Wire format shared by the tool server and `RemoteToolSet`.

Frames travel as the raw uint8 array with its shape and exact timestamps (not JPEG), so a remote
observation is bit-identical to the local one. Floats go through JSON's shortest repr, which
round-trips exactly. Two response encodings, chosen by the request's ``Accept`` header:

- ``application/x-paravt-frames`` (`BINARY_TYPE`, what `RemoteToolSet` asks for):
  ``b"PVTF1"`` + 4-byte big-endian header length + the JSON header + the frame buffers back to
  back. A frames object in the header names its buffer (``"buffer": i``); the header's
  ``"buffers"`` lists every buffer's byte length. No base64, no copy of the pixels into JSON.
- ``application/json`` (any other ``Accept``): frames as base64 in ``"data"`` (older clients).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from paravt.errors import ToolCallError
from paravt.tools.base import Observation, ToolContext, VisualBudget
from paravt.video.types import Frames, VideoInfo

MAX_FRAME_BYTES = 512 << 20
BINARY_TYPE = "application/x-paravt-frames"
_MAGIC = b"PVTF1"
_HEAD = struct.Struct(">I")

Buffers = list[memoryview]  # frame buffers of one binary body, in order


def frames_to_wire(frames: Frames | None, buffers: Buffers | None = None) -> dict[str, Any] | None:
    """The frames' header entry; their pixels are appended to ``buffers`` (binary) or inlined as
    base64 (``buffers=None``: JSON)."""
    if frames is None:
        return None
    arr = np.ascontiguousarray(frames.array, dtype=np.uint8)
    d: dict[str, Any] = {
        "shape": list(arr.shape),
        "dtype": "uint8",
        "timestamps": list(frames.timestamps),
    }
    if buffers is None:
        d["data"] = base64.b64encode(arr.tobytes()).decode("ascii")
    else:
        d["buffer"] = len(buffers)
        buffers.append(arr.data.cast("B"))
    return d


def frames_from_wire(
    d: Mapping[str, Any] | None, buffers: Sequence[memoryview] | None = None
) -> Frames | None:
    if d is None:
        return None
    shape = tuple(int(x) for x in d["shape"])
    if (
        d.get("dtype") != "uint8"
        or len(shape) != 4
        or shape[3] != 3
        or int(np.prod(shape)) > MAX_FRAME_BYTES
    ):
        raise ToolCallError(
            f"frames on the wire have shape {shape} / dtype {d.get('dtype')}; expected uint8 "
            "T×H×W×3"
        )
    if "buffer" in d:
        i = int(d["buffer"])
        if buffers is None or not 0 <= i < len(buffers):
            raise ToolCallError(f"frames on the wire name buffer {i}, which the body does not have")
        raw: bytes | memoryview = buffers[i]
    else:
        raw = base64.b64decode(d["data"])
    if len(raw) != int(np.prod(shape)):
        raise ToolCallError(f"frames on the wire have {len(raw)} bytes for shape {shape}")
    arr = np.frombuffer(raw, dtype=np.uint8).reshape(shape)
    return Frames(arr, tuple(float(t) for t in d["timestamps"]))


def encode_binary(header: Mapping[str, Any], buffers: Buffers) -> bytes:
    """A `BINARY_TYPE` body: magic, header length, JSON header (plus the buffers' lengths),
    buffers."""
    head = json.dumps(
        {**header, "buffers": [len(b) for b in buffers]}, separators=(",", ":")
    ).encode()
    return b"".join([_MAGIC, _HEAD.pack(len(head)), head, *buffers])


def decode_binary(body: bytes) -> tuple[dict[str, Any], Buffers]:
    """The header and buffers of a `BINARY_TYPE` body; `ToolCallError` when it is malformed."""
    view = memoryview(body)
    start = len(_MAGIC) + _HEAD.size
    if len(body) < start or bytes(view[: len(_MAGIC)]) != _MAGIC:
        raise ToolCallError("binary tool response does not start with the paravt frames magic")
    (n,) = _HEAD.unpack_from(body, len(_MAGIC))
    if start + n > len(body):
        raise ToolCallError(f"binary tool response header of {n} bytes overruns the body")
    try:
        header = json.loads(bytes(view[start : start + n]))
        sizes = [int(x) for x in header["buffers"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ToolCallError(f"binary tool response header is not valid: {exc}") from None
    offset = start + n
    if any(x < 0 for x in sizes) or offset + sum(sizes) != len(body):
        raise ToolCallError("binary tool response buffers do not match the body's length")
    buffers = []
    for size in sizes:
        buffers.append(view[offset : offset + size])
        offset += size
    return header, buffers


def observation_to_wire(obs: Observation, buffers: Buffers | None = None) -> dict[str, Any]:
    return {
        "text": obs.text,
        "frames": frames_to_wire(obs.frames, buffers),
        "window": list(obs.window) if obs.window is not None else None,
        "error": obs.error,
        "delivery": obs.delivery,
        "metrics": {k: float(v) for k, v in obs.metrics.items()},
    }


def observation_from_wire(
    d: Mapping[str, Any], buffers: Sequence[memoryview] | None = None
) -> Observation:
    window = d.get("window")
    return Observation(
        text=str(d.get("text", "")),
        frames=frames_from_wire(d.get("frames"), buffers),
        window=(float(window[0]), float(window[1])) if window is not None else None,
        error=d.get("error"),
        delivery=d.get("delivery", "text"),
        metrics={str(k): float(v) for k, v in (d.get("metrics") or {}).items()},
    )


def budget_to_wire(b: VisualBudget) -> dict[str, int]:
    return dataclasses.asdict(b)


def apply_budget(ctx: ToolContext, d: Mapping[str, Any]) -> None:
    """Copy the server's budget state back into the episode's context (in place)."""
    ctx.budget.used_pixels = int(d["used_pixels"])
    ctx.budget.calls = int(d["calls"])


def context_to_wire(ctx: ToolContext) -> dict[str, Any]:
    d = {
        f.name: getattr(ctx, f.name)
        for f in dataclasses.fields(ctx)
        if f.name not in ("info", "budget")
    }
    d["info"] = dataclasses.asdict(ctx.info)
    d["budget"] = budget_to_wire(ctx.budget)
    return d


def context_from_wire(d: Mapping[str, Any], *, episode_id: str | None = None) -> ToolContext:
    fields = {f.name for f in dataclasses.fields(ToolContext)} - {"info", "budget"}
    kwargs = {k: d[k] for k in fields if k in d}
    if episode_id is not None:
        kwargs["episode_id"] = episode_id
    return ToolContext(
        info=VideoInfo(**d["info"]), budget=VisualBudget(**d.get("budget", {})), **kwargs
    )
