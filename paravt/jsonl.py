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

Stdlib only: a bottom-layer module (docs/ARCHITECTURE.md §1).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

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


def append_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]], *, fsync: bool = True) -> None:
    """Append each of ``rows`` as one line of JSON (parent folders made; a torn last line ended
    first), then flush (and, with ``fsync``, sync to disk) so a later kill loses nothing written."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(dict(r), ensure_ascii=False) + "\n" for r in rows)
    prefix = "\n" if ends_torn(p) else ""
    with p.open("a", encoding="utf-8") as f:
        f.write(prefix + lines)
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
        log.warning("%s: skipped %d line(s) that are not whole JSON objects (line %s; a write cut by a "
                    "killed run): their rows count as not done", p, len(bad), ", ".join(map(str, bad[:5])))
    return out


def rewrite_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Replace ``path`` with ``rows`` atomically (temp file + rename): a kill leaves the old file
    or the new one, never a mix."""
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write("".join(json.dumps(dict(r), ensure_ascii=False) + "\n" for r in rows))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, p)
