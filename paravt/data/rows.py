"""The typed rows of a dataset (``paravt.data.schema`` lays them out in parquet and re-exports
them): messages and their text and video parts, the ground truth (`ExtraInfo`), an SFT trace
(`SFTRow`) or an RL / eval prompt (`RLRow`), and the error of a row that breaks a rule."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeGuard, get_args

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


def is_mode(x: object) -> TypeGuard[Mode]:
    return x in MODES


def is_task(x: object) -> TypeGuard[TaskType]:
    return x in TASKS


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
    nframes: int = VideoConfig.model_fields[
        "overview_nframes"
    ].default  # this row's overview budget (its trace's)
    subset: str = ""
    split: str = "train"
    needle_start: float | None = None
    needle_end: float | None = None
    needle_kind: str | None = None
    #: what the needle looks like, in the perception's words ("a full-frame red flash")
    needle_description: str | None = None
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


class RowDataError(DataError):
    """One row breaks a rule of the schema; ``cause`` names the rule (`paravt.data.screen` counts
    and lists error rows by it: ``malformed``, ``answer``, ``empty_messages``)."""

    def __init__(self, message: str, cause: str = "malformed") -> None:
        super().__init__(message)
        self.cause = cause
