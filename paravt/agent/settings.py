"""Plain values an Episode runs with (built from the config at the edge, STYLE.md §3)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from paravt.config import DispatchMode, TrainConfig
from paravt.models.base import SamplingParams

Mode = DispatchMode  # the one definition is paravt.config.DispatchMode (registry: agent.modes.MODES)


@dataclass(frozen=True)
class EpisodeInput:
    """One question on one video. ``nframes`` is the overview budget (the gated n in RL)."""

    id: str
    video: str
    question: str
    task: Literal["mcq", "tvg", "oe"]
    answer: str
    options: tuple[str, ...] | None = None
    nframes: int = 16
    meta: Mapping[str, Any] = field(default_factory=dict)

    def with_nframes(self, n: int) -> EpisodeInput:
        return replace(self, nframes=n)


@dataclass(frozen=True)
class EpisodeSettings:
    mode: Mode = "parallel"
    k_max: int = 8
    max_turns: int = 3
    min_window_s: float = 1.0
    max_context_tokens: int = 16384
    think_prefix: bool = True
    execute_tool_code: bool = False
    overview_max_pixels: int = 64 * 64
    crop_max_frames: int = 16
    crop_fps: float = 1.0
    crop_max_pixels: int = 224 * 224
    size_factor: int = 32
    sampling: SamplingParams = field(default_factory=SamplingParams)
    sub_sampling: SamplingParams = field(default_factory=lambda: SamplingParams(max_new_tokens=512))
    subagent_timeout_s: float = 300.0
    prompt_version: str = "v1"
    system_prompt: bool = True  # False: no system prompt at all (the question only; eval's direct class)

    @classmethod
    def from_config(cls, cfg: TrainConfig, *, mode: Mode | None = None, temperature: float | None = None) -> EpisodeSettings:
        r, v, s = cfg.rollout, cfg.video, cfg.sampling
        temp = s.temperature if temperature is None else temperature
        return cls(
            mode=mode or r.mode, k_max=r.k_max, max_turns=r.max_turns, min_window_s=r.min_window_s,
            max_context_tokens=r.max_context_tokens, think_prefix=r.think_prefix,
            execute_tool_code=r.execute_tool_code, overview_max_pixels=v.overview_max_pixels,
            crop_max_frames=v.crop_max_frames, crop_fps=v.crop_fps, crop_max_pixels=v.crop_max_pixels,
            size_factor=v.size_factor,
            sampling=SamplingParams(temperature=temp, top_p=s.top_p, max_new_tokens=s.max_new_tokens),
            sub_sampling=SamplingParams(temperature=temp, top_p=s.top_p, max_new_tokens=s.sub_max_new_tokens),
            subagent_timeout_s=r.subagent_timeout_s, prompt_version=r.prompt_version,
        )


def derive_seed(sp: SamplingParams, *parts: object) -> SamplingParams:
    """A request's own seed from the run's base seed and where the request stands (episode id,
    agent, turn): stable across processes (blake2b, never the salted ``hash``), so rollouts are
    reproducible whatever batches the backend forms. No base seed → no seed."""
    if sp.seed is None:
        return sp
    digest = hashlib.blake2b(repr((sp.seed, *parts)).encode(), digest_size=8).digest()
    return replace(sp, seed=int.from_bytes(digest, "little") >> 1)
