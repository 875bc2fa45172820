"""Read a wandb OFFLINE run file (``run-<id>.wandb``) back, for the tests: wandb ships no Python
reader any more. The file is a 7-byte header (``:W&B`` + magic + version), then LevelDB-log
records in 32 KiB blocks: each chunk has a 7-byte header (crc32, length u16, type u8: 1 full,
2 first, 3 middle, 4 last) and a block's tail shorter than 7 bytes is padding."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from wandb.proto import wandb_internal_pb2 as pb

BLOCK = 32768
HEADER = 7


def records(path: Path) -> Iterator[Any]:
    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a wandb run file"
    pos, buf = HEADER, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:
            pos += left
            continue
        _crc, n, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        if kind == 0 and n == 0:
            break
        buf += data[pos + HEADER : pos + HEADER + n]
        pos += HEADER + n
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(buf)
            yield rec
            buf = b""


def offline_runs(root: Path) -> list[Path]:
    """The ``run-*.wandb`` files under ``root/wandb`` (one per process that logged), oldest
    first."""
    return sorted((root / "wandb").glob("offline-run-*/run-*.wandb"))


def history(path: Path) -> list[dict[str, Any]]:
    """Each logged step's items (keys joined with '/'), with ``_step``."""
    rows = []
    for r in records(path):
        if r.WhichOneof("record_type") == "history":
            rows.append(
                {
                    (i.key or "/".join(i.nested_key)): json.loads(i.value_json)
                    for i in r.history.item
                }
            )
    return rows


def run_records(path: Path) -> Iterator[Any]:
    """The run records of a ``.wandb`` file (none when the process died before wandb wrote one)."""
    return (r.run for r in records(path) if r.WhichOneof("record_type") == "run")


def run_record(path: Path) -> Any:
    return next(run_records(path))


def artifacts(path: Path) -> list[tuple[str, str]]:
    return [
        (r.artifact.name, r.artifact.type)
        for r in records(path)
        if r.WhichOneof("record_type") == "artifact"
    ]
