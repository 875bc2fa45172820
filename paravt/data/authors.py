"""Import the ParaVT authors' released parquets (`paravt data import`).

Layout, as read from the public release code (github.com/EvolvingLMMs-Lab/ParaVT,
``paravt/data/materialize.py`` and ``paravt/rl/data/dataset.py``):

- RL files: ``prompt`` = list of ``{"role", "content"}`` whose text holds a ``<video>`` marker;
  ``videos`` = list of ``{"video": path}`` (plain strings also accepted); ``extra_info`` = a JSON
  string or struct with ``answer`` and ``question_type`` ∈ {mcq, tvg, oe} (anything else → oe).
- SFT files: ``messages`` = a JSON string (or list) of ``{"role", "content"}``; content items are
  ``{"type": "text", "text"}``, ``{"type": "video_url", "video_url": {"url"}}`` and
  ``{"type": "image_url", "image_url": {"url"}}``.
- Paths are "sentinel-relative" (``longvt_source/…``, ``museg/charades/…``,
``museg/et_instruct_164k/…``, ``selfqa/…``), optionally with a ``file://`` scheme, and resolve under
the extraction root.

Assumptions (documented, not in the release): a video item shows the WHOLE file, sampled with
``nframes`` frames (`paravt data import --nframes`: the overview budget video.overview_nframes) —
the release leaves frame sampling to the trainer; the duration
is probed from the file; options, when not in ``extra_info``, stay None (they are inside the
question text). Our schema has no image parts, so rows with ``image_url`` items are reported as
unsupported and skipped. Rows whose media are missing are reported and skipped.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from paravt.config import TaskType
from paravt.data.rows import (
    ExtraInfo,
    Message,
    Part,
    RLRow,
    Row,
    SFTRow,
    TextPart,
    VideoPart,
    is_task,
)
from paravt.data.schema import write_rows
from paravt.errors import DataError, VideoError

_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.S)


@dataclass(frozen=True)
class ImportReport:
    source: str
    out: str
    layout: str  # "rl" | "sft"
    rows_in: int
    rows_out: int
    missing: tuple[tuple[int, str], ...] = ()  # (row index, path) of media not found under root
    unsupported: dict[str, int] = field(default_factory=dict)


def _rel(url: str, root: Path) -> str:
    raw = url[len("file://") :] if url.startswith("file://") else url
    p = Path(raw)
    if p.is_absolute():
        try:
            return str(p.resolve().relative_to(root.resolve()))
        except ValueError:
            return str(p)
    return raw


class _Media:
    """Resolves and probes media once per path; remembers what is missing."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.durations: dict[str, float | None] = {}

    def duration(self, rel: str) -> float | None:
        if rel not in self.durations:
            from paravt.video import probe

            path = Path(rel) if Path(rel).is_absolute() else self.root / rel
            try:
                self.durations[rel] = probe(path).duration if path.exists() else None
            except VideoError:
                self.durations[rel] = None
        return self.durations[rel]


def _extra_dict(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return {}
    return dict(raw) if isinstance(raw, Mapping) else {}


def _task(x: Any) -> TaskType:
    return x if is_task(x) else "oe"


def _rl_row(
    i: int, rec: Mapping[str, Any], media: _Media, nframes: int, name: str
) -> tuple[Row | None, list[str], str | None]:
    vids = [
        _rel(v["video"] if isinstance(v, Mapping) else str(v), media.root)
        for v in rec.get("videos") or []
    ]
    missing = [v for v in vids if media.duration(v) is None]
    if not vids or missing:
        return None, missing or ["<no video>"], None
    duration = media.duration(vids[0]) or 0.0
    extra = _extra_dict(rec.get("extra_info"))
    msgs: list[Message] = []
    question = ""
    for m in rec.get("prompt") or []:
        text = str(m.get("content", ""))
        if "<video>" in text:
            before, _, after = text.partition("<video>")
            parts: list[Part] = [
                p
                for p in (
                    TextPart(before) if before else None,
                    VideoPart(vids[0], 0.0, duration, nframes),
                    TextPart(after) if after else None,
                )
                if p
            ]
            msgs.append(Message(m["role"], tuple(parts)))
            question = (before + after).strip()
        else:
            msgs.append(Message(m["role"], text))
    rid = str(extra.get("id", f"{name}-{i}"))
    info = ExtraInfo(
        id=rid,
        task=_task(extra.get("question_type", extra.get("task"))),
        question=question,
        answer=str(extra.get("answer", "")),
        duration=duration,
        options=tuple(extra["options"]) if extra.get("options") else None,
        nframes=nframes,
        subset=str(extra.get("data_source", extra.get("subset", ""))),
        source="paravt-release",
    )
    return RLRow(rid, tuple(msgs), tuple(vids), info), [], None


def _sft_content(
    content: Any, media: _Media, nframes: int, vids: list[str], missing: list[str]
) -> str | tuple[Part, ...] | None:
    if isinstance(content, str):
        return content
    parts: list[Part] = []
    for item in content:
        kind = item.get("type")
        if kind == "text":
            parts.append(TextPart(str(item.get("text", ""))))
        elif kind == "video_url":
            rel = _rel(str((item.get("video_url") or {}).get("url", "")), media.root)
            d = media.duration(rel)
            if d is None:
                missing.append(rel)
                continue
            if rel not in vids:
                vids.append(rel)
            parts.append(VideoPart(rel, 0.0, d, nframes))
        else:
            return None  # image_url and other media: unsupported
    return tuple(parts)


def _sft_row(
    i: int, rec: Mapping[str, Any], media: _Media, nframes: int, name: str
) -> tuple[Row | None, list[str], str | None]:
    raw = rec.get("messages")
    msgs_raw = json.loads(raw) if isinstance(raw, str) else list(raw or [])
    vids: list[str] = []
    missing: list[str] = []
    msgs: list[Message] = []
    for m in msgs_raw:
        content = _sft_content(m.get("content", ""), media, nframes, vids, missing)
        if content is None:
            return None, [], "image_or_other_media"
        msgs.append(Message(m["role"], content))
    if missing or not vids:
        return None, missing or ["<no video>"], None
    extra = _extra_dict(rec.get("extra_info"))
    last = next((m.text for m in reversed(msgs) if m.role == "assistant"), "")
    found = _ANSWER_RE.findall(last)
    answer = str(extra.get("answer", found[-1].strip() if found else ""))
    question = next((m.text.replace("<video>", "").strip() for m in msgs if m.role == "user"), "")
    rid = str(extra.get("id", f"{name}-{i}"))
    info = ExtraInfo(
        id=rid,
        task=_task(extra.get("question_type")),
        question=question,
        answer=answer,
        duration=media.duration(vids[0]) or 0.0,
        nframes=nframes,
        source="paravt-release",
    )
    calls = sum(m.text.count("<tool_call>") for m in msgs if m.role == "assistant")
    mode = "parallel" if calls else "none"
    return SFTRow(rid, "main", mode, tuple(msgs), tuple(vids), info), [], None  # type: ignore[arg-type]


def import_file(
    path: str | Path, *, root: str | Path, out_dir: str | Path, nframes: int
) -> ImportReport:
    """Convert one release parquet into our schema at ``out_dir/<name>`` (same file name)."""
    src, rootp = Path(path), Path(root)
    if not src.exists():
        raise DataError(
            f"input {src} does not exist; pass the downloaded ParaVT-Parquet files with --in"
        )
    table = pq.read_table(str(src))
    cols = set(table.column_names)
    if "prompt" in cols:
        layout, fn = "rl", _rl_row
    elif "messages" in cols:
        layout, fn = "sft", _sft_row
    else:
        raise DataError(
            f"{src} has columns {sorted(cols)}; a release file has 'prompt' (RL) or 'messages' "
            "(SFT)"
        )
    media = _Media(rootp)
    rows: list[Row] = []
    missing: list[tuple[int, str]] = []
    unsupported: Counter = Counter()
    recs = table.to_pylist()
    for i, rec in enumerate(recs):
        row, miss, why = fn(i, rec, media, nframes, src.stem)
        missing.extend((i, m) for m in miss)
        if why:
            unsupported[why] += 1
        if row is not None:
            rows.append(row)
    out = Path(out_dir) / src.name
    write_rows(out, rows)
    return ImportReport(
        str(src), str(out), layout, len(recs), len(rows), tuple(missing), dict(unsupported)
    )


def import_files(
    paths: Sequence[str | Path], *, root: str | Path, out_dir: str | Path, nframes: int
) -> list[ImportReport]:
    return [import_file(p, root=root, out_dir=out_dir, nframes=nframes) for p in paths]
