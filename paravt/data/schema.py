"""The dataset schema: one parquet layout for SFT traces, sub-agent rows and RL/eval prompts.

Columns (every file we write has exactly these, in this order):

| column       | type           | meaning |
|--------------|----------------|---------|
| `id`         | string         | row id (stable; `<video>-<task>[-<variant>]`) |
| `kind`       | string         | `main` (main-agent trace), `sub` (sub-agent row), `rl` (prompt only) |
| `mode`       | string         | `parallel`, `sequential`, `none` (direct answer) or `sub` |
| `messages`   | string (JSON)  | list of `{"role", "content"}`; content is a string or a list of parts |
| `videos`     | list<string>   | media paths RELATIVE to the data root, in first-use order |
| `extra_info` | string (JSON)  | `ExtraInfo` (answer, task, options, duration, question, needle, ...) |

Message parts: `{"type": "text", "text": str}` and `{"type": "video", "video": "rel/path.mp4",
"video_start": s, "video_end": e, "nframes": n}`. A video part is a *recipe*, not frames: at
training time `paravt.data.chat.to_chat_messages` decodes it with `paravt.video.sample_frames`,
so SFT sees frames sampled exactly as the episode samples them at rollout; the part becomes one
`<video>` marker in the message text.

Think prefix (docs/ARCHITECTURE.md §2): every assistant message of a MAIN trace is stored WITH its leading
``"<think>\\n"`` (`paravt.protocol.tags.THINK_PREFIX`). At rollout that prefix is forced as prompt
tokens, so the SFT trainer must mask those first tokens of each assistant turn (loss mask 0) and
train on the rest. Sub-agent replies have no forced prefix.

`kind == "rl"` rows hold the prompt messages (system + user) only; the episode re-renders the
user prompt at the gated n, so `extra_info` carries everything it needs (`question`, `options`,
`answer`, `task`, `nframes`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import pyarrow as pa
import pyarrow.parquet as pq

from paravt.config import GatingConfig, TaskType, VideoConfig
from paravt.errors import DataError

Task = TaskType
Kind = Literal["main", "sub", "rl"]
Mode = Literal["parallel", "sequential", "none", "sub"]
Role = Literal["system", "user", "assistant", "tool"]

TASKS: tuple[str, ...] = get_args(TaskType)
KINDS: tuple[str, ...] = ("main", "sub", "rl")
MODES: tuple[str, ...] = ("parallel", "sequential", "none", "sub")
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")
OVERVIEW_NS: tuple[int, ...] = tuple(GatingConfig().choices)  # nFrames Gating's budgets (config)

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


@dataclass(frozen=True)
class TextPart:
    text: str


@dataclass(frozen=True)
class VideoPart:
    """A window of a video and how many frames to sample from it (decoded at use time)."""

    video: str  # path relative to the data root
    video_start: float
    video_end: float
    nframes: int


Part = TextPart | VideoPart


@dataclass(frozen=True)
class Message:
    role: Role
    content: str | tuple[Part, ...]
    #: Tool messages only, optional: a text summary of the frames the content shows (used by
    #: `paravt data convert` to turn a sequential observation into a parallel result line).
    summary: str | None = None

    @property
    def text(self) -> str:
        """The content as text, video parts shown as `<video>` markers (for checks and stats)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text if isinstance(p, TextPart) else "<video>" for p in self.content)


@dataclass(frozen=True)
class ExtraInfo:
    """Ground truth and provenance of a row. Needle fields are set for ParaVT-Synth only."""

    id: str
    task: Task
    question: str
    answer: str
    duration: float
    options: tuple[str, ...] | None = None
    nframes: int = VideoConfig.model_fields["overview_nframes"].default  # this row's overview budget (its trace's)
    subset: str = ""
    split: str = "train"
    needle_start: float | None = None
    needle_end: float | None = None
    needle_kind: str | None = None
    tool_necessary_at_n: Mapping[int, bool] | None = None
    source: str = "paravt"

    @property
    def tool_necessary(self) -> bool | None:
        """Whether the overview at this row's n misses the needle (None when unknown)."""
        if self.tool_necessary_at_n is None:
            return None
        return self.tool_necessary_at_n.get(self.nframes)


@dataclass(frozen=True)
class SFTRow:
    """A supervised trace: the whole conversation, assistant turns included."""

    id: str
    kind: Literal["main", "sub"]
    mode: Mode
    messages: tuple[Message, ...]
    videos: tuple[str, ...]
    extra_info: ExtraInfo


@dataclass(frozen=True)
class RLRow:
    """An RL / eval prompt: system + user messages, ground truth in `extra_info`."""

    id: str
    messages: tuple[Message, ...]
    videos: tuple[str, ...]
    extra_info: ExtraInfo
    mode: Mode = "parallel"
    kind: Literal["rl"] = field(default="rl", init=False)


Row = SFTRow | RLRow


# ---------------------------------------------------------------- (de)serialisation helpers


def part_to_dict(p: Part) -> dict[str, Any]:
    if isinstance(p, TextPart):
        return {"type": "text", "text": p.text}
    return {"type": "video", "video": p.video, "video_start": p.video_start,
            "video_end": p.video_end, "nframes": p.nframes}


def part_from_dict(d: Mapping[str, Any], where: str) -> Part:
    kind = d.get("type")
    if kind == "text":
        return TextPart(str(d.get("text", "")))
    if kind == "video":
        try:
            return VideoPart(str(d["video"]), float(d["video_start"]), float(d["video_end"]),
                             int(d["nframes"]))
        except (KeyError, TypeError, ValueError) as e:
            raise DataError(f"{where}: video part {dict(d)} lacks or mistypes {e}; need video, "
                            "video_start, video_end, nframes") from e
    raise DataError(f"{where}: part type {kind!r} is not 'text' or 'video'")


def messages_to_json(messages: Sequence[Message]) -> str:
    out = []
    for m in messages:
        content: Any = m.content if isinstance(m.content, str) else [part_to_dict(p) for p in m.content]
        d: dict[str, Any] = {"role": m.role, "content": content}
        if m.summary is not None:
            d["summary"] = m.summary
        out.append(d)
    return json.dumps(out, ensure_ascii=False)


def messages_from_json(text: str, where: str = "<row>") -> tuple[Message, ...]:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: messages is not valid JSON ({e}); write rows with write_rows") from e
    if not isinstance(raw, list):
        raise DataError(f"{where}: messages must be a JSON list of messages, got {type(raw).__name__}")
    msgs = []
    for i, m in enumerate(raw):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ROLES:
            raise DataError(f"{where}: message {i} has role {role!r}; allowed: {', '.join(ROLES)}")
        c = m.get("content", "")
        content = c if isinstance(c, str) else tuple(part_from_dict(p, f"{where} msg {i}") for p in c)
        summary = m.get("summary")
        msgs.append(Message(role, content, None if summary is None else str(summary)))
    return tuple(msgs)


def extra_to_json(e: ExtraInfo) -> str:
    d = asdict(e)
    if e.tool_necessary_at_n is not None:
        d["tool_necessary_at_n"] = {str(k): bool(v) for k, v in sorted(e.tool_necessary_at_n.items())}
    if e.options is not None:
        d["options"] = list(e.options)
    return json.dumps(d, ensure_ascii=False, sort_keys=True)


def extra_from_dict(d: Mapping[str, Any], where: str = "<row>") -> ExtraInfo:
    known = {f for f in ExtraInfo.__dataclass_fields__}
    kw = {k: v for k, v in d.items() if k in known}
    for req in ("id", "task", "question", "answer", "duration"):
        if req not in kw:
            raise DataError(f"{where}: extra_info lacks {req!r}; required: id, task, question, answer, duration")
    if kw["task"] not in TASKS:
        raise DataError(f"{where}: task {kw['task']!r} is not one of {TASKS}")
    if kw.get("options") is not None:
        kw["options"] = tuple(str(o) for o in kw["options"])
    if kw.get("tool_necessary_at_n") is not None:
        kw["tool_necessary_at_n"] = {int(k): bool(v) for k, v in kw["tool_necessary_at_n"].items()}
    kw["answer"], kw["duration"] = str(kw["answer"]), float(kw["duration"])
    return ExtraInfo(**kw)


def row_to_record(row: Row) -> dict[str, Any]:
    return {"id": row.id, "kind": row.kind, "mode": row.mode,
            "messages": messages_to_json(row.messages), "videos": list(row.videos),
            "extra_info": extra_to_json(row.extra_info)}


def row_from_record(rec: Mapping[str, Any], where: str = "<row>") -> Row:
    kind = rec.get("kind")
    if kind not in KINDS:
        raise DataError(f"{where}: kind {kind!r} is not one of {KINDS}")
    mode = rec.get("mode") or ("sub" if kind == "sub" else "parallel")
    if mode not in MODES:
        raise DataError(f"{where}: mode {mode!r} is not one of {MODES}")
    messages = messages_from_json(rec["messages"], where)
    try:
        extra = extra_from_dict(json.loads(rec["extra_info"]), where)
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: extra_info is not valid JSON ({e})") from e
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
        raise DataError(f"dataset file {p} is not a parquet file ({err}); pass a parquet written by paravt "
                        "(`paravt data synth`, `paravt data import`)") from None
    return p


def read_rows(path: str | Path) -> list[Row]:
    """Read a parquet written by `write_rows`. Files in the ParaVT authors' released layout go
    through `paravt data import` first (`paravt.data.authors`)."""
    p = check_dataset(path)
    table = pq.read_table(str(p))
    missing = [c for c in ("id", "kind", "messages", "extra_info") if c not in table.column_names]
    if missing:
        raise DataError(f"{p} lacks columns {missing}; if it is an authors' release file (columns "
                        f"{table.column_names}), convert it with `paravt data import`")
    return [row_from_record(rec, f"{p.name} row {i}") for i, rec in enumerate(table.to_pylist())]
