"""The token-level inference contract shared by every backend (hf, openai, verl).

A request carries BOTH the token ids of the prompt (vision placeholders already expanded by the
processor, exactly as the trajectory holds them) and the chat messages it was built from: token
backends (hf, verl) read ``prompt_ids`` + media, chat backends (an OpenAI-compatible server)
read ``messages``. Media are passed as raw frames; each backend turns them into its own input
(pixel values, data URLs, verl ``video_data``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from paravt.config import SamplingConfig
from paravt.video.types import Frames

FinishReason = Literal["stop", "length", "error"]
_S = SamplingConfig()  # the defaults, written once in config


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = _S.temperature  # 0 = greedy; defaults: paravt.config.SamplingConfig
    top_p: float = _S.top_p
    max_new_tokens: int = _S.max_new_tokens
    seed: int | None = None  # per-request seed for reproducible sampling (hf backend)


@dataclass(frozen=True)
class ChatMessage:
    """One chat message. ``content`` is text; ``videos``/``images`` are the media that the text's
    placeholders refer to, in order (the text holds one ``<video>``/``<image>`` marker each)."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    videos: tuple[Frames, ...] = ()
    images: tuple[Frames, ...] = ()  # each a single-frame Frames (T=1)


@dataclass(frozen=True)
class GenRequest:
    prompt_ids: tuple[int, ...]
    messages: tuple[ChatMessage, ...]
    videos: tuple[Frames, ...] = ()  # media of the whole prompt, in placeholder order
    images: tuple[Frames, ...] = ()
    sampling: SamplingParams = field(default_factory=SamplingParams)
    # text already forced at the start of the response (e.g. "<think>\n"): token backends have
    # it at the end of prompt_ids; chat backends must continue it (continue_final_message).
    response_prefix: str = ""
    # hf backend: keep this row's KV cache (prompt + response) so that a next request extending it
    # prefills only its new tokens (the main agent's turns; paravt.models.hf.turn_cache)
    keep_kv: bool = False


@dataclass(frozen=True)
class GenOutput:
    token_ids: tuple[int, ...]  # sampled tokens, stop token included when generation stopped on it
    logprobs: tuple[float, ...]  # sampling logprob of each token in token_ids (same length)
    text: str  # decoded token_ids without special-token scaffolding (im_end etc.)
    finish_reason: FinishReason
    error: str | None = None  # set when finish_reason == "error"; the episode records it
    metrics: dict[str, float] = field(default_factory=dict)  # latency_s etc.

    def __post_init__(self) -> None:
        assert len(self.token_ids) == len(self.logprobs), (len(self.token_ids), len(self.logprobs))


def error_output(message: str, latency_s: float = 0.0) -> GenOutput:
    return GenOutput(
        token_ids=(),
        logprobs=(),
        text="",
        finish_reason="error",
        error=message,
        metrics={"latency_s": latency_s},
    )


@runtime_checkable
class Generator(Protocol):
    """Async, batched generation. All requests of one call are served together (one batched
    ``generate`` on an accelerator); outputs come back in request order. Never raises for a
    single bad request: that request's output has ``finish_reason == "error"``."""

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]: ...

    async def aclose(self) -> None: ...
