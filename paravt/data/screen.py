"""The ONE screening of dataset rows, shared by every command that reads them (`paravt train sft`,
`train rl`, `eval --data`, `data check`, `data distill`): a row that cannot be used is an ERROR ROW,
never trained on and never scored as an ordinary miss.

A row is an error row, under one cause (docs/reliability.md, "Bad rows and videos"):

- ``too_large``: its ``messages`` and ``extra_info`` JSON hold more than ``max_row_bytes`` bytes
  (config ``max_row_bytes``); measured on the column, before the row is parsed;
- ``malformed``, ``answer``, ``empty_messages``: the row breaks the schema (`RowDataError` of
  `paravt.data.schema`: a wrong part, a NaN/empty answer, no messages, a trace with no assistant
  text);
- ``no_video``: a prompt row (kind ``rl``) without a video;
- ``video_outside_root``: a video path that leaves the data root (``../../etc/passwd``, an
  absolute path elsewhere); judged on the path's text, so a symlink INSIDE the root to media
  elsewhere is fine;
- ``video_missing``: no file at the path (a dangling symlink included);
- ``video_unreadable``: not a regular file (a FIFO, a device, a directory, a symlink loop: named
  as such, `paravt.video.usable.file_problem`), or a file that does not probe as a video (0 bytes,
  truncated, not a video): each distinct video is opened once, probe only (`paravt.video.probe`);
- ``video_too_short``: fewer frames than one temporal patch of the processor
  (`paravt.video.usable.MIN_FRAMES`): no visual token could come of it;
- ``video_window``: a message's video part (a trace's crop) asks for a window outside its video's
  probed span, the rule the decoder applies in training (it used to pass `data check` and then
  abort `train sft` naming neither the row nor the file).

`screen_rows` returns the usable rows and the error rows. When some rows are usable, each distinct
cause is ONE warning line on stderr (count and first example); when none is, `DataError` with the
summary (exit 2). A file-level fault (not parquet, missing or mistyped column, 0 rows) is a
`DataError` from `paravt.data.schema.read_table` before any row is looked at.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from paravt.data.rows import KINDS, Row, RowDataError, VideoPart
from paravt.data.schema import read_table, row_from_record, short
from paravt.errors import DataError, VideoError

log = logging.getLogger(__name__)

#: Where a run writes its error rows (the training and distill run directories).
DATA_ERRORS = "data_errors.json"


@dataclass(frozen=True)
class RowError:
    """A row that is not used, and why."""

    id: str
    cause: str  # one of the module docstring's causes
    detail: str  # one line naming the offending value


@dataclass(frozen=True)
class Screened:
    """The rows of one file that a command may use, and its error rows."""

    path: Path
    rows: tuple[Row, ...]
    errors: tuple[RowError, ...]

    @property
    def by_cause(self) -> dict[str, int]:
        return dict(sorted(Counter(e.cause for e in self.errors).items()))

    def to_json(self) -> dict[str, Any]:
        """What metrics.json / data_errors.json list: counts by cause and every error row."""
        return {
            "file": str(self.path),
            "usable_rows": len(self.rows),
            "error_rows": len(self.errors),
            "by_cause": self.by_cause,
            "errors": [asdict(e) for e in self.errors],
        }

    def summary(self) -> str:
        """One line: each cause with its count and first example."""
        first = {e.cause: e for e in reversed(self.errors)}
        return "; ".join(
            f"{c}: {n} row{'s' * (n != 1)} (e.g. row {first[c].id}: {first[c].detail})"
            for c, n in self.by_cause.items()
        )


def inside(root: Path, rel: str) -> Path | None:
    """The path of ``rel`` under ``root`` when it stays inside ``root`` (judged on the text: ``..``
    parts, absolute paths elsewhere); None otherwise."""
    base = os.path.normpath(os.path.abspath(root))
    p = os.path.normpath(os.path.join(base, rel))  # an absolute ``rel`` replaces base here
    return Path(p) if p == base or p.startswith(base.rstrip(os.sep) + os.sep) else None


class _Videos:
    """Each distinct video of a file, checked once (probe only)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: dict[str, tuple[str, str] | None] = {}
        self.duration: dict[str, float] = {}  # of each video that probed

    def check(self, rel: str) -> tuple[str, str] | None:
        if rel not in self.seen:
            self.seen[rel] = self._check(rel)
        return self.seen[rel]

    def _check(self, rel: str) -> tuple[str, str] | None:
        from paravt.video import probe
        from paravt.video.usable import file_problem, too_short

        path = inside(self.root, rel)
        if path is None:
            return (
                "video_outside_root",
                f"video {rel!r} is outside the data root {self.root}; videos are paths under it",
            )
        problem = file_problem(path)
        if problem is not None:
            missing, why = problem
            where = f"under the data root {self.root}"
            return (
                "video_missing" if missing else "video_unreadable"
            ), f"video {rel!r} {why} {where}"
        try:
            info = probe(path)
        except (VideoError, OSError) as err:
            return "video_unreadable", f"video {rel!r} cannot be read: {str(err).split(';')[0]}"
        if (short := too_short(info)) is not None:
            return "video_too_short", f"video {rel!r} {short}"
        self.duration[rel] = info.duration
        return None

    def window_problem(self, part: VideoPart) -> str | None:
        """Why a message's video part asks for frames outside its (probed) video, or None: the
        rule the decoder applies in training (`paravt.video.budget.check_window`)."""
        from paravt.video.budget import WINDOW_TOLERANCE_S

        dur = self.duration[part.video]
        s, e = part.video_start, part.video_end
        if s < e and s >= -WINDOW_TOLERANCE_S and e <= dur + WINDOW_TOLERANCE_S:
            return None
        return (
            f"the video part of {part.video!r} asks [{s:g}, {e:g}] s, outside the video's "
            f"[0, {dur:.3f}] s"
        )


def _video_parts(row: Row) -> Iterator[VideoPart]:
    for m in row.messages:
        if not isinstance(m.content, str):
            yield from (p for p in m.content if isinstance(p, VideoPart))


def _videos_of(row: Row) -> Iterator[str]:
    yield from row.videos
    yield from (p.video for p in _video_parts(row))


def _screen_one(
    rec: dict[str, Any], size: int, rid: str, max_row_bytes: int, videos: _Videos
) -> Row | RowError:
    if size > max_row_bytes:
        return RowError(
            rid,
            "too_large",
            f"{size} bytes of messages and extra_info > max_row_bytes={max_row_bytes}",
        )
    try:
        row = row_from_record(rec, f"row {rid}")
    except RowDataError as err:
        return RowError(rid, err.cause, str(err).removeprefix(f"row {rid}: "))
    except DataError as err:
        return RowError(rid, "malformed", str(err).removeprefix(f"row {rid}: "))
    if row.kind == "rl" and not row.videos:
        return RowError(rid, "no_video", "a prompt row has no video (videos column)")
    for rel in dict.fromkeys(_videos_of(row)):
        bad = videos.check(rel)
        if bad is not None:
            return RowError(rid, *bad)
    for part in _video_parts(row):
        if (why := videos.window_problem(part)) is not None:
            return RowError(rid, "video_window", why)
    return row


def screen_rows(
    path: str | Path,
    root: str | Path | None = None,
    *,
    kinds: Collection[str] = KINDS,
    max_row_bytes: int,
    limit: int | None = None,
    warn: bool = True,
) -> Screened:
    """The rows of ``path`` whose kind is in ``kinds`` (the first ``limit`` of them), screened (see
    the module docstring); videos resolve under ``root`` (default: the file's folder). `DataError`
    with the summary when no row is usable."""
    table = read_table(path)
    p = Path(path)
    base = Path(os.path.abspath(root if root is not None else p.parent))
    sizes = pc.add(
        pc.fill_null(pc.binary_length(table.column("messages")), 0),
        pc.fill_null(pc.binary_length(table.column("extra_info")), 0),
    ).to_pylist()
    videos, rows, errors = _Videos(base), list[Row](), list[RowError]()
    picked = [
        (rec, size)
        for rec, size in zip(table.to_pylist(), sizes, strict=True)
        if rec.get("kind") in kinds or rec.get("kind") not in KINDS
    ]
    for rec, size in picked[:limit] if limit else picked:
        named = isinstance(rec.get("id"), str) and 0 < len(rec["id"]) <= 80
        rid = rec["id"] if named else short(rec.get("id"))
        got = _screen_one(rec, size, rid, max_row_bytes, videos)
        if isinstance(got, RowError):
            errors.append(got)
        else:
            rows.append(got)
    out = Screened(p, tuple(rows), tuple(errors))
    if not rows:
        if not errors:
            raise DataError(f"{p} holds no row of kind {' or '.join(kinds)}")
        raise DataError(
            f"{p}: no usable row ({len(errors)} error row{'s' * (len(errors) != 1)}: "
            f"{out.summary()}); fix the rows or the data root ({base})"
        )
    if warn:
        warn_errors(out)
    return out


def warn_errors(screened: Screened) -> None:
    """One warning line per distinct cause of ``screened``'s error rows."""
    first: dict[str, RowError] = {}
    for e in screened.errors:
        first.setdefault(e.cause, e)
    for cause, n in screened.by_cause.items():
        e = first[cause]
        log.warning(
            "%s: %d row%s skipped as data errors (%s), e.g. row %s: %s",
            screened.path.name,
            n,
            "s" * (n != 1),
            cause,
            e.id,
            e.detail,
        )


def write_data_errors(out_dir: str | Path, screened: Screened) -> Path | None:
    """``out_dir/data_errors.json`` listing the error rows (removed when there is none: a rerun on
    fixed data leaves no stale list)."""
    path = Path(out_dir) / DATA_ERRORS
    if not screened.errors:
        path.unlink(missing_ok=True)
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(screened.to_json(), indent=1) + "\n")
    return path
