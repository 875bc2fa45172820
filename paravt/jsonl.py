"""Append-only JSONL files that a run resumes from (eval ``results.jsonl``, distill
``progress.jsonl`` and its experience bank, the trainers' ``train_log.jsonl``): the ONE writer and
the ONE reader.

A process killed in the middle of a write leaves the file ending in a torn line (no newline). Two
rules keep every later row:

- `append_jsonl` ends a torn last line with a newline before it appends, so the new rows are
  whole lines of their own (otherwise the first new row is glued to the torn one and both are
  lost when read back);
- `read_jsonl` skips lines that are not complete JSON objects (a torn line, anywhere in the
  file) with one warning per file naming how many, and reads a missing file as empty.

Lines end at "\n" only: rows are written with ``ensure_ascii=False``, so U+2028, U+2029 and U+0085
inside a string are written raw and are part of the row (``str.splitlines`` would tear it).

Writes that find the disk full or the path read-only (ENOSPC, EACCES, EROFS) are one `DiskError`
naming the file and what was kept (``paravt.errors.disk_write``); `write_atomic` is also the writer
of the JSON and HTML results (``metrics.json``, the report).

Stdlib and ``paravt.errors`` only: a bottom-layer module (docs/ARCHITECTURE.md §1).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from paravt.errors import DiskError, disk_write

log = logging.getLogger(__name__)


def ends_torn(path: Path) -> bool:
    """True when ``path`` is non-empty and its last byte is not a newline (a cut-off write)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() == 0:
                return False
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except FileNotFoundError:
        return False


def append_jsonl(
    path: str | Path, rows: Iterable[Mapping[str, Any]], *, fsync: bool = True
) -> None:
    """Append each of ``rows`` as one line of JSON (parent folders made; a torn last line ended
    first), then flush (and, with ``fsync``, sync to disk) so a later kill loses nothing written."""
    p = Path(path)
    lines = "".join(json.dumps(dict(r), ensure_ascii=False) + "\n" for r in rows)
    with disk_write(
        p, "rows to", lambda: f"the rows {p.name} held before this write (a rerun reads them back)"
    ):
        p.parent.mkdir(parents=True, exist_ok=True)
        _append(p, ("\n" if ends_torn(p) else "") + lines, fsync=fsync)


def _append(p: Path, text: str, *, fsync: bool) -> None:
    with p.open("a", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        if fsync:
            os.fsync(f.fileno())


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The JSON objects of ``path`` in file order. Blank lines are skipped silently; lines that
    are not complete JSON objects (torn by a killed writer) are skipped with one warning. A missing
    file reads as empty."""
    p = Path(path)
    if not p.exists():
        return []
    out: list[dict[str, Any]] = []
    bad: list[int] = []
    text = p.read_text(encoding="utf-8", errors="replace")
    for no, line in enumerate(text.split("\n"), 1):  # not splitlines(): see the module doc
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            bad.append(no)
            continue
        if isinstance(obj, dict):
            out.append(obj)
        else:
            bad.append(no)
    if bad:
        log.warning(
            "%s: skipped %d line(s) that are not whole JSON objects (line %s; a write cut by a "
            "killed run): their rows count as not done",
            p,
            len(bad),
            ", ".join(map(str, bad[:5])),
        )
    return out


def rewrite_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Replace ``path`` with ``rows`` atomically (temp file + rename): a kill leaves the old file
    or the new one, never a mix."""
    write_atomic(
        path, "".join(json.dumps(dict(r), ensure_ascii=False) + "\n" for r in rows), "the rows of"
    )


def write_atomic(path: str | Path, text: str, what: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically: a temp file, synced, renamed over it. A
    full disk or a refused write (``paravt.errors.disk_write``) removes the temp file, keeps the
    previous ``path`` as it was and is one `DiskError` naming ``what`` and the path; so is a path
    that is a directory. No failure leaves the temp file behind."""
    p = Path(path)
    if p.is_dir():
        raise DiskError(
            f"cannot write {what} {p}: it is a directory; pass a file path (e.g. {p / p.name}), "
            "nothing was written"
        )
    tmp = p.with_name(p.name + ".tmp")
    try:
        with disk_write(p, what, lambda: _kept_previous(p, tmp)):
            p.parent.mkdir(parents=True, exist_ok=True)
            _write_synced(tmp, text)
            os.replace(tmp, p)
    except BaseException:  # any failure, any interrupt: the temp file never stays behind
        tmp.unlink(missing_ok=True)
        raise


def _write_synced(tmp: Path, text: str) -> None:
    with tmp.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _kept_previous(p: Path, tmp: Path) -> str:
    tmp.unlink(missing_ok=True)
    return (
        f"the previous {p.name}, unchanged"
        if p.exists()
        else f"nothing ({p.name} was not there before)"
    )
