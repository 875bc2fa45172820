"""Plain values an Episode runs with, built from the config at the edge (the CLI, the trainers)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from paravt.config import (
    CallForms,
    DispatchMode,
    RolloutConfig,
    SamplingConfig,
    SubagentPrompt,
    TaskType,
    TrainConfig,
    TurnRules,
    VideoConfig,
)
from paravt.models.base import SamplingParams

Mode = (
    DispatchMode  # the one definition is paravt.config.DispatchMode (registry: agent.modes.MODES)
)


OVERVIEW_NFRAMES: int = VideoConfig.model_fields[
    "overview_nframes"
].default  # written once, in config


@dataclass(frozen=True)
class EpisodeInput:
    """One question on one video. ``nframes`` is the overview budget (the gated n in RL). Built
    from a dataset row, a benchmark sample or a verl row by ``paravt.agent.inputs`` only."""

    id: str
    video: str
    question: str
    task: TaskType
    answer: str
    options: tuple[str, ...] | None = None
    nframes: int = OVERVIEW_NFRAMES
    meta: Mapping[str, Any] = field(
        default_factory=dict
    )  # informational extras; code reads the fields below
    subset: str = ""
    duration: float | None = None  # seconds, when the row knows it
    benchmark: str = ""
    tool_necessary_at_n: Mapping[int, bool] | None = (
        None  # does an n-frame overview miss the evidence?
    )

    @property
    def tool_necessary(self) -> bool | None:
        """Whether the evidence is missed at THIS input's overview budget (so a gated n changes
        it)."""
        return (
            None if self.tool_necessary_at_n is None else self.tool_necessary_at_n.get(self.nframes)
        )

    def with_nframes(self, n: int) -> EpisodeInput:
        return replace(self, nframes=n)


_R, _V, _S = (
    RolloutConfig(),
    VideoConfig(),
    SamplingConfig(),
)  # the defaults, written once in config


#: What eval and infer run whatever ``rollout.call_forms`` / ``rollout.turn_rules`` say (those are
#: RL's, read with ``from_config(training=True)``): each call judged alone, our per-turn limits.
EVAL_CALL_FORMS: CallForms = "per_call"
EVAL_TURN_RULES: TurnRules = "paravt"


@dataclass(frozen=True)
class ForcedAnswer:
    """A last user turn asking for the answer once the episode's last tool round is read (the
    release's eval protocol, ``eval.protocol: release``): ``text`` is that turn, the reply is cut
    at ``max_new_tokens`` and is the episode's final turn."""

    text: str
    max_new_tokens: int


@dataclass(frozen=True)
class EpisodeSettings:
    """Plain values an Episode runs with; every default is the config's (``paravt.config``)."""

    mode: Mode = _R.mode
    k_max: int = _R.k_max
    max_turns: int = _R.max_turns
    min_window_s: float = _R.min_window_s
    max_context_tokens: int = _R.max_context_tokens
    think_prefix: bool = _R.think_prefix
    # eval's; RL rollouts take rollout.call_forms / turn_rules (from_config(training=True))
    call_forms: CallForms = EVAL_CALL_FORMS
    turn_rules: TurnRules = EVAL_TURN_RULES
    overview_max_pixels: int = _V.overview_max_pixels
    # None: the overview is exactly the input's n frames (eval, infer); a rate: min(n, round(
    # duration × rate)) frames (RL rollouts: from_config(training=True), video.overview_fps)
    overview_fps: float | None = None
    crop_max_frames: int = _V.crop_max_frames
    crop_fps: float = _V.crop_fps
    crop_max_pixels: int = _V.crop_max_pixels
    size_factor: int = _V.size_factor
    sampling: SamplingParams = field(default_factory=SamplingParams)
    sub_sampling: SamplingParams = field(
        default_factory=lambda: SamplingParams(max_new_tokens=_S.sub_max_new_tokens)
    )
    subagent_timeout_s: float = _R.subagent_timeout_s
    subagent_prompt: SubagentPrompt = _R.subagent_prompt
    prompt_version: str = _R.prompt_version
    system_prompt: bool = (
        True  # False: no system prompt at all (the question only; eval's direct class)
    )
    # The eval protocols' own texts and turn rules (``paravt.eval.benchmarks.release``); the
    # defaults leave the episode as training runs it.
    system_text: str | None = None  # the system prompt itself, instead of the mode's template
    user_suffix: str = ""  # a line after the question and its options in the first user turn
    call_cap: int | None = None  # only a turn's first N calls run; the rest are dropped unseen
    forced_answer: ForcedAnswer | None = None  # after the last turn's tool round: ask, then stop

    @property
    def max_generations(self) -> int:
        """Main-agent generations at most: ``max_turns`` tool rounds read, then one more
        (``rollout.max_turns``, counted as the release counts)."""
        return self.max_turns + 1

    @classmethod
    def from_config(
        cls,
        cfg: TrainConfig,
        *,
        mode: Mode | None = None,
        temperature: float | None = None,
        training: bool = False,
    ) -> EpisodeSettings:
        """``temperature``: an eval's or a probe's own, for the main agent and the sub-agents;
        ``training``: RL rollouts and what stands for them (the τ = 0.7 probes, the offline
        filter): the overview follows ``video.overview_fps`` and the calls follow
        ``rollout.call_forms`` and ``rollout.turn_rules``; otherwise (eval, infer) exactly n
        frames, and eval's own call forms and per-turn rules (``per_call``, ``paravt``: k_max,
        min window, de-duplication) whatever those two say."""
        r, v, s = cfg.rollout, cfg.video, cfg.sampling
        temp = s.temperature if temperature is None else temperature
        own = s.sub_temperature
        sub_temp = temp if temperature is not None or own is None else own
        return cls(
            mode=mode or r.mode,
            k_max=r.k_max,
            max_turns=r.max_turns,
            min_window_s=r.min_window_s,
            max_context_tokens=r.max_context_tokens,
            think_prefix=r.think_prefix,
            call_forms=r.call_forms if training else EVAL_CALL_FORMS,
            turn_rules=r.turn_rules if training else EVAL_TURN_RULES,
            overview_max_pixels=v.overview_max_pixels,
            overview_fps=v.overview_fps if training else None,
            crop_max_frames=v.crop_max_frames,
            crop_fps=v.crop_fps,
            crop_max_pixels=v.crop_max_pixels,
            size_factor=v.size_factor,
            sampling=SamplingParams(
                temperature=temp, top_p=s.top_p, max_new_tokens=s.max_new_tokens
            ),
            sub_sampling=SamplingParams(
                temperature=sub_temp, top_p=s.top_p, max_new_tokens=s.sub_max_new_tokens
            ),
            subagent_timeout_s=r.subagent_timeout_s,
            subagent_prompt=r.subagent_prompt,
            prompt_version=r.prompt_version,
        )


def derive_seed(sp: SamplingParams, *parts: object) -> SamplingParams:
    """A request's own seed from the run's base seed and where the request stands (episode id,
    agent, turn): stable across processes (blake2b, never the salted ``hash``), so rollouts are
    reproducible whatever batches the backend forms. No base seed → no seed."""
    if sp.seed is None:
        return sp
    digest = hashlib.blake2b(repr((sp.seed, *parts)).encode(), digest_size=8).digest()
    return replace(sp, seed=int.from_bytes(digest, "little") >> 1)
