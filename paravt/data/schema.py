"""The dataset schema: one parquet layout for SFT traces, sub-agent rows and RL/eval prompts (the
typed rows themselves are `paravt.data.rows`).

Columns (every file we write has exactly these, in this order):

| column       | type          | meaning |
|--------------|---------------|---------|
| `id`         | string        | row id (stable; `<video>-<task>[-<variant>]`) |
| `kind`       | string        | `main` (main-agent trace), `sub` (sub-agent row), `rl` (prompt) |
| `mode`       | string        | `parallel`, `sequential`, `none` (direct answer) or `sub` |
| `messages`   | string (JSON) | list of `{"role", "content"}`; content: a string or parts |
| `videos`     | list<string>  | media paths RELATIVE to the data root, in first-use order |
| `extra_info` | string (JSON) | `ExtraInfo` (answer, task, options, duration, question, needle…) |

Message parts: `{"type": "text", "text": str}` and `{"type": "video", "video": "rel/path.mp4",
"video_start": s, "video_end": e, "nframes": n}`. A video part is a *recipe*, not frames: at
training time `paravt.data.chat.to_chat_messages` decodes it with `paravt.video.sample_frames`,
so SFT sees frames sampled exactly as the episode samples them at rollout; the part becomes one
`<video>` marker in the message text.

Think prefix (docs/ARCHITECTURE.md §2): every assistant message of a MAIN trace is stored WITH its
leading ``"<think>\\n"`` (`paravt.protocol.tags.THINK_PREFIX`). At rollout that prefix is forced as
prompt tokens, so the SFT trainer must mask those first tokens of each assistant turn (loss mask 0)
and
train on the rest. Sub-agent replies have no forced prefix.

`kind == "rl"` rows hold the prompt messages (system + user) only; the episode re-renders the
user prompt at the gated n, so `extra_info` carries everything it needs (`question`, `options`,
`answer`, `task`, `nframes`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

# the row types, re-exported (``X``): callers import them from this module
from paravt.data.rows import (
    KINDS,
    MODES,
    ROLES,
    TASKS,
    ExtraInfo,
    Message,
    Part,
    RLRow,
    Row,
    RowDataError,
    SFTRow,
    TextPart,
    VideoPart,
    is_mode,
)
from paravt.errors import DataError

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("kind", pa.string()),
        ("mode", pa.string()),
        ("messages", pa.string()),
        ("videos", pa.list_(pa.string())),
        ("extra_info", pa.string()),
    ]
)


#: Column → (accepted arrow types, what it must hold); ``mode`` and ``videos`` may be all-null.
_COLUMN_TYPES: dict[str, tuple[tuple[pa.DataType, ...], str]] = {
    "id": ((pa.string(), pa.large_string()), "string"),
    "kind": ((pa.string(), pa.large_string()), "string"),
    "mode": ((pa.string(), pa.large_string(), pa.null()), "string"),
    "messages": ((pa.string(), pa.large_string()), "string (the messages as JSON text)"),
    "videos": (
        (pa.list_(pa.string()), pa.large_list(pa.string()), pa.list_(pa.large_string()), pa.null()),
        "list<string> (paths relative to the data root)",
    ),
    "extra_info": ((pa.string(), pa.large_string()), "string (JSON text)"),
}


# ---------------------------------------------------------------- (de)serialisation helpers


def part_to_dict(p: Part) -> dict[str, Any]:
    if isinstance(p, TextPart):
        return {"type": "text", "text": p.text}
    return {
        "type": "video",
        "video": p.video,
        "video_start": p.video_start,
        "video_end": p.video_end,
        "nframes": p.nframes,
    }


def part_from_dict(d: Mapping[str, Any], where: str) -> Part:
    kind = d.get("type")
    if kind == "text":
        return TextPart(str(d.get("text", "")))
    if kind == "video":
        try:
            return VideoPart(
                str(d["video"]), float(d["video_start"]), float(d["video_end"]), int(d["nframes"])
            )
        except (KeyError, TypeError, ValueError) as e:
            raise DataError(
                f"{where}: video part {dict(d)} lacks or mistypes {e}; need video, "
                "video_start, video_end, nframes"
            ) from e
    raise DataError(f"{where}: part type {kind!r} is not 'text' or 'video'")


def messages_to_json(messages: Sequence[Message]) -> str:
    out = []
    for m in messages:
        content: Any = (
            m.content if isinstance(m.content, str) else [part_to_dict(p) for p in m.content]
        )
        d: dict[str, Any] = {"role": m.role, "content": content}
        if m.summary is not None:
            d["summary"] = m.summary
        out.append(d)
    return json.dumps(out, ensure_ascii=False)


def messages_from_json(text: str, where: str = "<row>") -> tuple[Message, ...]:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(
            f"{where}: messages is not valid JSON ({e}); write rows with write_rows"
        ) from e
    if not isinstance(raw, list):
        raise DataError(
            f"{where}: messages must be a JSON list of messages, got {type(raw).__name__}"
        )
    msgs = []
    for i, m in enumerate(raw):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ROLES:
            raise DataError(f"{where}: message {i} has role {role!r}; allowed: {', '.join(ROLES)}")
        c = m.get("content", "")
        content = (
            c if isinstance(c, str) else tuple(part_from_dict(p, f"{where} msg {i}") for p in c)
        )
        summary = m.get("summary")
        msgs.append(Message(role, content, None if summary is None else str(summary)))
    return tuple(msgs)


def extra_to_json(e: ExtraInfo) -> str:
    d = asdict(e)
    if e.tool_necessary_at_n is not None:
        d["tool_necessary_at_n"] = {
            str(k): bool(v) for k, v in sorted(e.tool_necessary_at_n.items())
        }
    if e.options is not None:
        d["options"] = list(e.options)
    return json.dumps(d, ensure_ascii=False, sort_keys=True)


def extra_from_dict(d: Mapping[str, Any], where: str = "<row>") -> ExtraInfo:
    known = {f for f in ExtraInfo.__dataclass_fields__}
    kw = {k: v for k, v in d.items() if k in known}
    for req in ("id", "task", "question", "answer", "duration"):
        if req not in kw:
            raise DataError(
                f"{where}: extra_info lacks {req!r}; required: id, task, question, answer, duration"
            )
    if kw["task"] not in TASKS:
        raise DataError(f"{where}: task {kw['task']!r} is not one of {TASKS}")
    if kw.get("options") is not None:
        kw["options"] = tuple(str(o) for o in kw["options"])
    if kw.get("tool_necessary_at_n") is not None:
        kw["tool_necessary_at_n"] = {int(k): bool(v) for k, v in kw["tool_necessary_at_n"].items()}
    kw["answer"], kw["duration"] = answer_text(kw["answer"], where), float(kw["duration"])
    if not (math.isfinite(kw["duration"]) and kw["duration"] > 0):
        raise RowDataError(
            f"{where}: duration {kw['duration']!r} is not a positive finite number of seconds"
        )
    return ExtraInfo(**kw)


def short(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (error messages stay one short line)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def answer_text(value: Any, where: str) -> str:
    """A ground-truth answer as text; `RowDataError` (cause ``answer``) for none, an empty text or
    a non-finite number (a NaN answer would be scored against the string 'nan')."""
    nan = isinstance(value, float) and not math.isfinite(value)
    if isinstance(value, bool) or value is None or nan:
        raise RowDataError(
            f"{where}: answer {value!r} is not a usable ground truth; write the answer as text",
            "answer",
        )
    if not isinstance(value, (str, int, float)):
        raise RowDataError(
            f"{where}: answer {short(value)} is a {type(value).__name__}, not text", "answer"
        )
    text = str(value)
    if not text.strip():
        raise RowDataError(
            f"{where}: answer {short(value)} is empty; every row needs its ground truth", "answer"
        )
    return text


def row_to_record(row: Row) -> dict[str, Any]:
    return {
        "id": row.id,
        "kind": row.kind,
        "mode": row.mode,
        "messages": messages_to_json(row.messages),
        "videos": list(row.videos),
        "extra_info": extra_to_json(row.extra_info),
    }


def row_from_record(rec: Mapping[str, Any], where: str = "<row>") -> Row:
    """One parquet record as a typed row; `DataError` naming ``where`` and the bad value otherwise
    (`RowDataError` with its cause for the rules `paravt.data.screen` counts rows by)."""
    try:
        return _row_from_record(rec, where)
    except (TypeError, ValueError, AttributeError, KeyError) as err:  # a value of the wrong shape
        raise RowDataError(
            f"{where}: a value has the wrong type or shape ({type(err).__name__}: "
            f"{short(str(err), 120)}); write rows with "
            "paravt.data.schema.write_rows"
        ) from None


def _row_from_record(rec: Mapping[str, Any], where: str) -> Row:
    kind = rec.get("kind")
    if kind not in KINDS:
        raise DataError(f"{where}: kind {kind!r} is not one of {KINDS}")
    mode = rec.get("mode") or ("sub" if kind == "sub" else "parallel")
    if not is_mode(mode):
        raise DataError(f"{where}: mode {mode!r} is not one of {MODES}")
    for column in ("messages", "extra_info"):
        if not isinstance(rec.get(column), str):
            raise RowDataError(f"{where}: {column} {short(rec.get(column))} is not JSON text")
    messages = messages_from_json(rec["messages"], where)
    try:
        extra_raw = json.loads(rec["extra_info"])
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: extra_info is not valid JSON ({e})") from e
    if not isinstance(extra_raw, dict):
        raise RowDataError(f"{where}: extra_info {short(rec['extra_info'])} is not a JSON object")
    extra = extra_from_dict(extra_raw, where)
    if not messages:
        raise RowDataError(
            f"{where}: messages {short(rec['messages'])} is empty; a row needs its "
            "prompt (and a trace its assistant turns)",
            "empty_messages",
        )
    if kind != "rl" and not any(m.role == "assistant" and m.text.strip() for m in messages):
        raise RowDataError(
            f"{where}: a {kind} trace has no assistant text to train on", "empty_messages"
        )
    videos = tuple(rec.get("videos") or ())
    if kind == "rl":
        return RLRow(str(rec["id"]), messages, videos, extra, mode)
    return SFTRow(str(rec["id"]), kind, mode, messages, videos, extra)


def write_rows(path: str | Path, rows: Iterable[Row]) -> Path:
    """Write rows to a parquet file with `SCHEMA` (deterministic: same rows → same content)."""
    recs = [row_to_record(r) for r in rows]
    table = pa.Table.from_pylist(recs, schema=SCHEMA)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, str(out))
    return out


def check_dataset(path: str | Path) -> Path:
    """``path`` when it is a parquet file (only its footer is read); `DataError` naming it otherwise
    (the CLI checks its inputs with this before it loads a model)."""
    p = Path(path)
    if not p.is_file():
        what = "is a directory" if p.is_dir() else "does not exist"
        raise DataError(f"dataset file {p} {what}; build one with `paravt data synth --out DIR`")
    try:
        pq.read_metadata(str(p))
    except (pa.ArrowException, OSError) as err:
        raise DataError(
            f"dataset file {p} is not a parquet file ({err}); pass a parquet written by paravt "
            "(`paravt data synth`, `paravt data import`)"
        ) from None
    return p


def read_rows(path: str | Path) -> list[Row]:
    """Read a parquet written by `write_rows`. Files in the ParaVT authors' released layout go
    through `paravt data import` first (`paravt.data.authors`)."""
    p = check_dataset(path)
    return [
        row_from_record(rec, f"{p.name} row {i} (id {short(rec.get('id'))})")
        for i, rec in enumerate(read_table(p).to_pylist())
    ]


def check_columns(path: str | Path) -> pa.Schema:
    """The parquet's schema (footer only) when its columns are ours and it has rows: `DataError`
    naming a missing column (every column of ``SCHEMA``: ``mode`` and ``videos`` may hold nulls,
    never be absent), a column of another type (e.g. ``messages`` of int64) with the type it
    has, or a file of 0 rows."""
    p = Path(path)
    meta = pq.read_metadata(str(p))
    if meta.num_rows == 0:
        raise DataError(
            f"{p} has 0 rows; nothing to train on or evaluate; rebuild it "
            "(`paravt data synth`) or point at another file"
        )
    schema = meta.schema.to_arrow_schema()
    missing = [c for c in SCHEMA.names if c not in schema.names]  # every column of the schema
    if missing:
        raise DataError(
            f"{p} lacks columns {missing} of paravt's schema {SCHEMA.names} "
            "(paravt/data/schema.py); write rows with paravt.data.schema.write_rows, or, if it "
            f"is an authors' release file (columns {schema.names}), convert it with "
            "`paravt data import`"
        )
    for name, (types, want) in _COLUMN_TYPES.items():
        if name in schema.names and schema.field(name).type not in types:
            raise DataError(
                f"{p}: column {name!r} has type {schema.field(name).type}, not {want}; "
                "write rows with paravt.data.schema.write_rows"
            )
    return schema


def read_table(path: str | Path) -> pa.Table:
    """The whole table of a checked dataset (`check_dataset`, `check_columns`)."""
    p = check_dataset(path)
    check_columns(p)
    return pq.read_table(str(p))
