"""Read a wandb OFFLINE run file (``run-<id>.wandb``) back, for the tests: wandb ships no Python
reader any more; the chunk layout is read by ``paravt.tracking.stores.wandb_record_blobs``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from wandb.proto import wandb_internal_pb2 as pb

from paravt.tracking.stores import wandb_record_blobs


def records(path: Path) -> Iterator[Any]:
    """Every record of ``path``, parsed (the chunks are read by the library's own reader,
    ``paravt.tracking.stores.wandb_record_blobs``, which resume uses too)."""
    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a wandb run file"
    for blob in wandb_record_blobs(data):
        rec = pb.Record()
        rec.ParseFromString(blob)
        yield rec


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
