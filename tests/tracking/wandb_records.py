"""Read a wandb OFFLINE run file (``run-<id>.wandb``) back, for the tests: wandb ships no Python
reader any more; the chunk layout is read by ``paravt.tracking.stores.wandb_record_blobs``."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from wandb.proto import wandb_internal_pb2 as pb

from paravt.tracking.stores import wandb_record_blobs


def _holders(path: Path) -> list[int]:
    """The pids of the processes that hold ``path`` open (wandb's service, still writing it)."""
    pids = []
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            fds = list(fd_dir.iterdir())
        except OSError:  # the process ended, or is not ours to read
            continue
        if any(_link(fd) == str(path) for fd in fds):
            pids.append(int(fd_dir.parent.name))
    return pids


def _link(fd: Path) -> str | None:
    try:
        return os.readlink(fd)
    except OSError:  # that descriptor closed in between
        return None


def settled(path: Path, timeout_s: float = 30.0) -> Path:
    """``path`` once no process holds it open. ``Run.finish`` only INFORMS wandb's service that
    the run is done (a message, not awaited): the service closes the run file, writing its
    buffered records, after finish returns, so a read right after it can find the file still
    empty; and a killed run's service outlives it (its own session) until it sees its parent
    gone."""
    deadline = time.monotonic() + timeout_s
    while holders := _holders(path.resolve()):
        if os.getpid() in holders or time.monotonic() > deadline:
            raise TimeoutError(f"{path} still held open by {holders} after {timeout_s} s")
        time.sleep(0.05)
    return path


def records(path: Path) -> Iterator[Any]:
    """Every record of ``path``, parsed once the service has closed it (the chunks are read by
    the library's own reader, ``paravt.tracking.stores.wandb_record_blobs``, which resume uses
    too)."""
    data = settled(path).read_bytes()
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
