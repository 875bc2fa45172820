"""The ONE place where a dataset row becomes an ``EpisodeInput`` (the episode's typed input):
our parquet rows (``to_episode_input``, ``load_episode_inputs``) and verl rows
(``from_extra_info``, the JSON ``extra_info`` that ``write_verl_parquet`` writes). Benchmark
samples become one in ``paravt.eval.benchmarks.base.EvalSample.to_episode_input`` (eval reads
data, never the reverse). Code reads the typed fields (subset, duration, benchmark, tool
necessity per overview budget); ``meta`` keeps informational extras only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paravt.config import TrainConfig
from paravt.data.chat import resolve
from paravt.data.rows import Row
from paravt.data.screen import Screened, screen_rows
from paravt.errors import DataError

if TYPE_CHECKING:
    from paravt.agent.settings import EpisodeInput

#: ``extra_info`` keys a verl row must carry (paravt.integrations.verl.data.verl_record).
VERL_REQUIRED = ("id", "video", "question", "task", "answer")
#: The row size cap when a caller has no config (written once, in config).
MAX_ROW_BYTES: int = TrainConfig.model_fields["max_row_bytes"].default


def to_episode_input(row: Row, root: str | Path, *, nframes: int | None = None) -> EpisodeInput:
    """A row of ours: absolute video path, question, task, answer, options, the row's overview
    budget (or ``nframes``), subset, duration and tool necessity per n."""
    from paravt.agent.settings import EpisodeInput

    if not row.videos:
        raise DataError(f"row {row.id} has no video; every ParaVT row needs one (videos column)")
    e = row.extra_info
    meta: dict[str, object] = {"split": e.split, "source": e.source}
    if e.needle_start is not None:
        meta["needle"] = (e.needle_start, e.needle_end)
    return EpisodeInput(
        id=e.id,
        video=str(resolve(root, row.videos[0]).resolve()),
        question=e.question,
        task=e.task,
        answer=e.answer,
        options=e.options,
        nframes=e.nframes if nframes is None else nframes,
        meta=meta,
        subset=e.subset or "",
        duration=e.duration,
        tool_necessary_at_n=dict(e.tool_necessary_at_n)
        if e.tool_necessary_at_n is not None
        else None,
    )


@dataclass(frozen=True)
class LoadedInputs:
    """A file's usable prompt rows as EpisodeInputs, and its screening (error rows included)."""

    inputs: list[EpisodeInput]
    screened: Screened


def episode_inputs(
    path: str | Path,
    root: str | Path | None = None,
    *,
    nframes: int | None = None,
    limit: int | None = None,
    max_row_bytes: int = MAX_ROW_BYTES,
    warn: bool = True,
) -> LoadedInputs:
    """Prompt rows (kind ``rl``, the first ``limit``) of a parquet file, screened once
    (`paravt.data.screen`: error rows are listed, never run), as EpisodeInputs
    (``to_episode_input``); videos resolve against ``root`` (default: the file's folder)."""
    path = Path(path)
    base = Path(root) if root is not None else path.parent
    screened = screen_rows(
        path, base, kinds=("rl",), max_row_bytes=max_row_bytes, limit=limit, warn=warn
    )
    inputs = [to_episode_input(r, base, nframes=nframes) for r in screened.rows]
    return LoadedInputs(inputs, screened)


def load_episode_inputs(
    path: str | Path,
    root: str | Path | None = None,
    *,
    nframes: int | None = None,
    limit: int | None = None,
    max_row_bytes: int = MAX_ROW_BYTES,
    warn: bool = True,
) -> list[EpisodeInput]:
    """``episode_inputs(...).inputs``: the usable prompt rows of a parquet file."""
    return episode_inputs(
        path, root, nframes=nframes, limit=limit, max_row_bytes=max_row_bytes, warn=warn
    ).inputs


def from_extra_info(extra: Mapping[str, Any], nframes: int) -> EpisodeInput:
    """A verl row's ``extra_info`` (numpy values as verl's batch hands them over)."""
    from paravt.agent.settings import EpisodeInput

    missing = [k for k in VERL_REQUIRED if k not in extra]
    if missing:
        raise DataError(
            f"verl row extra_info lacks {missing}; build the parquet with "
            "paravt.integrations.verl.data.write_verl_parquet"
        )
    options: Sequence[str] | None = _plain(extra.get("options"))
    at_n = _plain(extra.get("tool_necessary_at_n"))
    duration = _plain(extra.get("duration"))
    return EpisodeInput(
        id=str(extra["id"]),
        video=str(extra["video"]),
        question=str(extra["question"]),
        task=str(extra["task"]),  # type: ignore[arg-type]
        answer=str(extra["answer"]),
        options=tuple(options) if options else None,
        nframes=nframes,
        subset=str(_plain(extra.get("subset")) or ""),
        duration=None if duration is None else float(duration),
        tool_necessary_at_n=None
        if not at_n
        else {int(k): bool(v) for k, v in dict(at_n).items() if v is not None},
    )


def _plain(value: Any) -> Any:
    """numpy scalars / arrays (what verl's batch hands over) → Python values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    return value
