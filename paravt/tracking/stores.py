"""What a tracker's own files hold, read back on resume: the steps of a wandb run (its
``run-<id>.wandb`` transaction logs) and of ``OUT/tb`` (TensorBoard event files). A resumed run
re-sends exactly the steps a store lacks (`paravt.tracking.fanout`), so a kill -9 that lost a
tracker's buffered steps loses nothing and sends nothing twice.

Both formats are length-prefixed record logs; a file cut short by a kill ends at its last whole
record (the torn tail is ignored, never an error)."""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: The scalar each tracker gets last in every step (verl's name): a step is held when it is there.
STEP_KEY = "training/global_step"

_WANDB_BLOCK, _WANDB_HEADER = 32768, 7


def wandb_steps(root: Path, run_id: str) -> set[int]:
    """The ``_step`` of every history record of run ``run_id`` under ``root`` (``OUT/wandb``)."""
    from wandb.proto import wandb_internal_pb2 as pb

    steps: set[int] = set()
    for path in sorted(root.glob(f"*run-*/run-{run_id}.wandb")):
        for blob in wandb_record_blobs(path.read_bytes()):
            rec = pb.Record()
            try:
                rec.ParseFromString(blob)
            except Exception:  # noqa: BLE001 - a torn record: the file ends here
                break
            if rec.WhichOneof("record_type") != "history":
                continue
            for item in rec.history.item:
                if (item.key or "/".join(item.nested_key)) == "_step":
                    steps.add(int(json.loads(item.value_json)))
    return steps


def wandb_record_blobs(data: bytes) -> Iterator[bytes]:
    """LevelDB-log records after the 7-byte ``:W&B`` header: 32 KiB blocks of chunks, each with a
    7-byte header (crc32, length u16, type u8: 1 full, 2 first, 3 middle, 4 last)."""
    for _, blob in wandb_records_at(data):
        yield blob


def cut_wandb_history(path: Path, step: int) -> bool:
    """Cut the run file ``path`` (a finished or killed process's ``run-<id>.wandb``) just before
    its first history record of a step after ``step``: a resumed run re-runs those steps, and its
    values replace the killed attempt's. True when the file was cut."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    for start, blob in wandb_records_at(data):
        rec = pb.Record()
        try:
            rec.ParseFromString(blob)
        except Exception:  # noqa: BLE001 - a torn record: the file ends here
            return False
        if rec.WhichOneof("record_type") != "history":
            continue
        for item in rec.history.item:
            if (item.key or "/".join(item.nested_key)) == "_step":
                if int(json.loads(item.value_json)) > step:
                    with path.open("r+b") as f:
                        f.truncate(start)
                    return True
    return False


def wandb_records_at(data: bytes) -> Iterator[tuple[int, bytes]]:
    """`wandb_record_blobs` with the offset of each record's first chunk."""
    if data[:4] != b":W&B":
        return
    pos, buf, start = _WANDB_HEADER, b"", _WANDB_HEADER
    while pos + _WANDB_HEADER <= len(data):
        left = _WANDB_BLOCK - pos % _WANDB_BLOCK
        if left < _WANDB_HEADER:
            pos += left
            continue
        _crc, n, kind = struct.unpack("<IHB", data[pos : pos + _WANDB_HEADER])
        end = pos + _WANDB_HEADER + n
        if (kind == 0 and n == 0) or end > len(data):
            return
        if kind in (1, 2):
            start = pos
        buf += data[pos + _WANDB_HEADER : end]
        pos = end
        if kind in (1, 4):
            yield start, buf
            buf = b""


_TB_STAMP = re.compile(r"tfevents\.(\d+)\.")


def tensorboard_steps(root: Path) -> set[int]:
    """The steps whose ``STEP_KEY`` scalar is in the event files under ``root``, read in the order
    they were written; a restart marker (SessionLog START at step s, written by
    ``SummaryWriter(purge_step=s)``) discards the steps >= s before it, as TensorBoard does."""
    from tensorboard.compat.proto import event_pb2

    steps: set[int] = set()
    for path in sorted(root.glob("events.out.tfevents.*"), key=_tb_order):
        for blob in _tfrecords(path.read_bytes()):
            ev = event_pb2.Event()
            try:
                ev.ParseFromString(blob)
            except Exception:  # noqa: BLE001 - a torn record: the file ends here
                break
            if ev.HasField("session_log") and ev.session_log.status == ev.session_log.START:
                steps = {s for s in steps if s < ev.step}
            if any(v.tag == STEP_KEY for v in ev.summary.value):
                steps.add(int(ev.step))
    return steps


def _tb_order(path: Path) -> tuple[int, int]:
    m = _TB_STAMP.search(path.name)
    return (int(m.group(1)) if m else 0, path.stat().st_mtime_ns)


def _tfrecords(data: bytes) -> Iterator[bytes]:
    """TFRecord: length u64, crc u32 of the length, the data, crc u32 of the data."""
    pos = 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack("<Q", data[pos : pos + 8])
        end = pos + 12 + n + 4
        if end > len(data):
            return
        yield data[pos + 12 : pos + 12 + n]
        pos = end


def step_rows(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """``train_log.jsonl`` rows by step (the last of a step wins)."""
    out: dict[int, dict[str, Any]] = {}
    for r in rows:
        s = r.get("step")
        if isinstance(s, int) and not isinstance(s, bool):
            out[s] = {k: v for k, v in r.items() if k != "step"}
    return out
