"""Token-level trajectories (docs/ARCHITECTURE.md §3).

A trajectory is built by APPENDING token ids, never by re-rendering the chat and slicing: what the
policy sampled is kept exactly as sampled (ids and logprobs, loss mask 1); prompts, template
scaffolding, tool responses and the forced think prefix are appended with loss mask 0.

``TrajectoryBuilder`` is the only mutable object here; ``freeze()`` returns the frozen record that
flows on to rewards, advantages and the loss.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from paravt.video.types import Frames

Role = Literal["main", "sub"]
EndReason = Literal["answer", "max_turns", "length", "error"]


@dataclass(frozen=True)
class CallRecord:
    """What happened to one tool call: the parsed window, and its result or error."""

    turn: int
    index: int  # 1-based position in its turn
    name: str | None
    start: float | None
    end: float | None
    ok: bool
    error: str | None = None
    summary: str = ""  # sub-agent summary / observation text shown to the main agent
    latency_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "index": self.index,
            "name": self.name,
            "start": self.start,
            "end": self.end,
            "ok": self.ok,
            "error": self.error,
            "summary": self.summary,
            "latency_s": round(self.latency_s, 4),
        }


@dataclass(frozen=True)
class TurnRecord:
    """One generation of this trajectory's agent, with what it caused."""

    text: str  # forced prefix + sampled response (the text rewards read)
    finish_reason: str
    calls: tuple[CallRecord, ...] = ()
    latency_s: float = 0.0
    n_prompt_tokens: int = 0
    n_prompt_visual_tokens: int = 0
    n_generated_tokens: int = 0


@dataclass(frozen=True, eq=False)
class Trajectory:
    episode_id: str
    role: Role
    index: int  # 0 for the main agent; 1..K for sub-agents in call order
    ids: tuple[int, ...]
    loss_mask: tuple[int, ...]  # 1 = sampled by the policy
    logprobs: tuple[float, ...]  # sampling logprob where loss_mask == 1, else 0.0
    videos: tuple[Frames, ...]
    images: tuple[Frames, ...]
    prompt_len: int  # ids before the first response token
    end_reason: EndReason
    turns: tuple[TurnRecord, ...] = ()

    def __post_init__(self) -> None:
        assert len(self.ids) == len(self.loss_mask) == len(self.logprobs)
        assert all(m == 0 for m in self.loss_mask[: self.prompt_len])

    @property
    def n_sampled(self) -> int:
        return sum(self.loss_mask)

    @property
    def response_ids(self) -> tuple[int, ...]:
        return self.ids[self.prompt_len :]

    @property
    def response_mask(self) -> tuple[int, ...]:
        return self.loss_mask[self.prompt_len :]


@dataclass
class TrajectoryBuilder:
    """Appends token spans; the single place where loss masks are decided."""

    episode_id: str
    role: Role
    index: int = 0
    ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    videos: list[Frames] = field(default_factory=list)
    images: list[Frames] = field(default_factory=list)
    turns: list[TurnRecord] = field(default_factory=list)
    prompt_len: int | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def add_context(
        self, ids: Sequence[int], videos: Sequence[Frames] = (), images: Sequence[Frames] = ()
    ) -> None:
        """Prompt, scaffolding, tool responses, forced prefixes: never trained on."""
        self.ids.extend(ids)
        self.loss_mask.extend([0] * len(ids))
        self.logprobs.extend([0.0] * len(ids))
        self.videos.extend(videos)
        self.images.extend(images)

    def add_sampled(self, ids: Sequence[int], logprobs: Sequence[float]) -> None:
        """Tokens the policy sampled, with their sampling logprobs (trained on)."""
        assert len(ids) == len(logprobs)
        if self.prompt_len is None:
            self.prompt_len = len(self.ids)
        self.ids.extend(ids)
        self.loss_mask.extend([1] * len(ids))
        self.logprobs.extend(logprobs)

    def snapshot(self) -> tuple[int, int, int]:
        """A rollback point (ids, videos, images)."""
        return len(self.ids), len(self.videos), len(self.images)

    def rollback(self, point: tuple[int, int, int]) -> None:
        n, nv, ni = point
        del self.ids[n:], self.loss_mask[n:], self.logprobs[n:]
        del self.videos[nv:], self.images[ni:]

    def freeze(self, end_reason: EndReason) -> Trajectory:
        return Trajectory(
            episode_id=self.episode_id,
            role=self.role,
            index=self.index,
            ids=tuple(self.ids),
            loss_mask=tuple(self.loss_mask),
            logprobs=tuple(self.logprobs),
            videos=tuple(self.videos),
            images=tuple(self.images),
            prompt_len=len(self.ids) if self.prompt_len is None else self.prompt_len,
            end_reason=end_reason,
            turns=tuple(self.turns),
        )


def calls_to_json(calls: Sequence[CallRecord]) -> list[Mapping[str, Any]]:
    return [c.to_json() for c in calls]
