"""The eval results file ``EVAL/results.jsonl``: one JSON row per (sample, mode)
(docs/ARCHITECTURE.md §6).

Rows are appended one line at a time and flushed to disk (`paravt.jsonl`, the one helper of every
resumed append-only file), so a killed run loses at most the row it was writing; `load_results`
skips such a truncated line and `finished_ids` lets a resumed run
skip what is already done. A line that is valid JSON but misses a field is a schema error
(`DataError`), not a crash artefact, and is reported.

A row whose episode failed (``end_reason == "error"``: the model server failed the request after
its retries, or the episode crashed) carries the cause in ``error`` and is not finished: a rerun
runs it again and appends its new row, and every reader keeps the LAST row of each (id, mode).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from paravt.agent.tally import TokenRow
from paravt.errors import DataError
from paravt.jsonl import append_jsonl, read_jsonl


@dataclass(frozen=True)
class CallRow:
    """One tool call of an episode, as recorded in a result row."""

    name: str
    start: float | None
    end: float | None
    ok: bool
    error: str | None = None
    summary: str = ""


@dataclass(frozen=True)
class TranscriptTurn:
    role: str  # "system" | "user" | "assistant" | "tool" | "sub[i]" …
    text: str


@dataclass(frozen=True)
class ResultRow:
    """One evaluated rollout. ``score`` is the accuracy reward already computed by the rewards
    module: option match (1/0) for ``mcq``, IoU for ``tvg``, token F1 for ``oe``."""

    id: str
    mode: str  # "parallel" | "sequential" | "none" (direct) …
    task: str  # "mcq" | "tvg" | "oe"
    subset: str
    nframes: int
    video: str
    duration: float
    question: str
    options: tuple[str, ...] | None
    answer: str
    prediction: str | None
    score: float
    correct: bool
    calls: tuple[CallRow, ...] = ()
    n_calls: int = 0  # calls recorded (run or rejected); a last turn's calls are never run
    calls_written: int | None = (
        None  # calls the model wrote (the reward's n_calls; training's kappa)
    )
    tokens: TokenRow = TokenRow()
    latency_s: float = 0.0
    end_reason: str = "answer"
    tool_necessary: bool | None = None
    format_reward: float | None = (
        None  # R_fmt on the one yardstick (default weights), docs/ARCHITECTURE.md §4/§6
    )
    transcript: tuple[TranscriptTurn, ...] = ()
    error: str | None = None  # why the episode failed (end_reason "error"), or its video's error

    @property
    def failed(self) -> bool:
        """The episode did not run to an end of the model's (a rerun retries it)."""
        return self.end_reason == "error"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["options"] = list(self.options) if self.options is not None else None
        return d

    def to_json(self) -> str:
        """One line of JSON (no newline inside)."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ResultRow:
        try:
            opts = d.get("options")
            return cls(
                id=str(d["id"]),
                mode=str(d["mode"]),
                task=str(d["task"]),
                subset=str(d.get("subset", "")),
                nframes=int(d["nframes"]),
                video=str(d.get("video", "")),
                duration=float(d.get("duration") or 0.0),
                question=str(d.get("question", "")),
                options=tuple(str(o) for o in opts) if opts is not None else None,
                answer=str(d.get("answer", "")),
                prediction=None if d.get("prediction") is None else str(d["prediction"]),
                score=float(d["score"]),
                correct=_flag(d.get("correct", False)),
                calls=tuple(_call(c) for c in d.get("calls") or ()),
                n_calls=int(d.get("n_calls", 0)),
                calls_written=None if d.get("calls_written") is None else int(d["calls_written"]),
                tokens=TokenRow(**{str(k): int(v) for k, v in (d.get("tokens") or {}).items()}),
                latency_s=float(d.get("latency_s") or 0.0),
                end_reason=str(d.get("end_reason", "answer")),
                tool_necessary=None
                if d.get("tool_necessary") is None
                else _flag(d["tool_necessary"]),
                format_reward=None if d.get("format_reward") is None else float(d["format_reward"]),
                transcript=tuple(
                    TranscriptTurn(str(t["role"]), str(t["text"]))
                    for t in d.get("transcript") or ()
                ),
                error=None if d.get("error") is None else str(d["error"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise DataError(
                f"result row {str(dict(d))[:120]}… does not follow the results.jsonl schema "
                f"({e!r}); "
                "rows need id, mode, task, nframes and score (docs/ARCHITECTURE.md §6)"
            ) from e

    @classmethod
    def from_json(cls, line: str) -> ResultRow:
        return cls.from_dict(json.loads(line))


def _flag(x: Any) -> bool:
    """A JSON boolean (``"false"`` is not one: ``bool("false")`` would read it as true)."""
    if isinstance(x, bool):
        return x
    raise TypeError(f"{x!r} is not true/false")


def _call(c: Any) -> CallRow:
    """One recorded tool call, each field of its type (`ResultRow.from_dict`'s errors)."""
    if not isinstance(c, Mapping):
        raise TypeError(f"call {c!r} is not an object")
    opt = lambda x: None if x is None else float(x)  # noqa: E731
    return CallRow(
        name=str(c["name"]),
        start=opt(c.get("start")),
        end=opt(c.get("end")),
        ok=_flag(c["ok"]),
        error=None if c.get("error") is None else str(c["error"]),
        summary=str(c.get("summary") or ""),
    )


@dataclass(frozen=True)
class ReadResults:
    """A results file read for display: the rows that follow the schema, and one line per row
    that does not (``row N (id …): why``), which the report shows instead of failing."""

    rows: tuple[ResultRow, ...]
    malformed: tuple[str, ...]


def read_results(path: str | Path) -> ReadResults:
    """``path``'s rows for display (`paravt.report.page`): a row off the schema is set aside with
    its reason, not raised (`load_results` raises: eval resumes from it)."""
    rows, bad = [], []
    for i, d in enumerate(read_jsonl(path), 1):
        try:
            rows.append(ResultRow.from_dict(d))
        except DataError as e:
            bad.append(f"row {i} (id {str(d.get('id'))[:60]!r}): {str(e.__cause__ or e)[:200]}")
    return ReadResults(tuple(latest(rows)), tuple(bad))


def append_result(path: str | Path, row: ResultRow) -> None:
    """Append ``row`` as one line and flush it to disk (fsync); a line cut short by a killed run
    is ended first (`paravt.jsonl.append_jsonl`), so the new row stays parseable."""
    append_jsonl(path, [row.to_dict()])


def load_results(path: str | Path) -> list[ResultRow]:
    """Rows of ``path`` in file order (`paravt.jsonl.read_jsonl`: torn lines skipped); of a
    (id, mode) written more than once (a failed row, then its rerun) only the last is kept."""
    return latest(ResultRow.from_dict(d) for d in read_jsonl(path))


def latest(rows: Iterable[ResultRow]) -> list[ResultRow]:
    """The last row of each (id, mode), in the order of those last rows."""
    last: dict[tuple[str, str], tuple[int, ResultRow]] = {}
    for i, r in enumerate(rows):
        last[(r.id, r.mode)] = (i, r)
    return [r for _, r in sorted(last.values(), key=lambda x: x[0])]


def finished_ids(path: str | Path, mode: str) -> set[str]:
    """Ids already evaluated in ``mode`` (for resuming an interrupted eval); a failed row is not
    finished, so a rerun (the server fixed) runs it again."""
    return {r.id for r in load_results(path) if r.mode == mode and not r.failed}
