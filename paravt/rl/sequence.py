"""One trace → one training sequence, built exactly as an episode builds its trajectory
(docs/ARCHITECTURE.md §3): prompt messages via ``ChatCodec.encode_message`` (mask 0), then for each
assistant turn the generation prompt (mask 0), the WHOLE response, ``<think>`` included, +
``<|im_end|>`` (mask 1) and the closing newline (mask 0); tool responses are context (mask 0).
The supervised trainers (SFT, the simulated base, SFT's replayed habit traces) all build here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from paravt.agent.trajectory import Trajectory, TrajectoryBuilder
from paravt.errors import DataError, VideoError
from paravt.protocol.tags import THINK_PREFIX

if TYPE_CHECKING:
    from paravt.config import VideoConfig
    from paravt.data.rows import Row
    from paravt.models.base import ChatMessage
    from paravt.models.chat import ChatCodec


def build_sequence(
    messages: Sequence[ChatMessage],
    codec: ChatCodec,
    *,
    mask_think_prefix: bool = False,
    row_id: str = "",
) -> Trajectory:
    """The training sequence of one trace; assistant responses carry loss mask 1 (with
    ``mask_think_prefix`` their leading ``<think>\\n`` is context, mask 0)."""
    b = TrajectoryBuilder(row_id, "main", 0)
    for m in messages:
        if m.role != "assistant":
            enc = codec.encode_message(m)
            b.add_context(enc.ids, enc.videos, enc.images)
            continue
        prefix = THINK_PREFIX if mask_think_prefix and m.content.startswith(THINK_PREFIX) else ""
        b.add_context(codec.generation_prompt(prefix))
        body = codec.encode_text(m.content[len(prefix) :]) + (codec.im_end_id,)
        b.add_sampled(body, [0.0] * len(body))
        b.add_context(codec.close_turn(body))
    return b.freeze("answer")


def trace_sequences(
    traces: Sequence[Row],
    root: Path,
    codec: ChatCodec,
    video: VideoConfig,
    *,
    source: Path | str = "",
    mask_think_prefix: bool = False,
) -> list[Trajectory]:
    """Traces (SFT rows, the base's, SFT's replayed ones) as training sequences, frames decoded
    from the videos under ``root`` as an episode shows them: a main trace's whole-video parts at
    ``video``'s overview size and its windows at the crop size, everything a sub-agent trace shows
    at the crop size (it only ever sees its window); a video that fails names the trace and
    ``source``."""
    from paravt.data.chat import to_chat_messages

    out = []
    for t in traces:
        # a whole-video part is the overview, except in a sub-agent's trace (its window is a crop)
        whole = video.crop_max_pixels if t.kind == "sub" else video.overview_max_pixels
        try:
            msgs = to_chat_messages(
                t,
                root,
                max_pixels=whole,
                crop_max_pixels=video.crop_max_pixels,
                size_factor=video.size_factor,
            )
        except (VideoError, DataError) as err:
            raise DataError(f"{source or root}: trace {t.id}: {err}") from None
        out.append(
            build_sequence(
                msgs, codec, row_id=t.id, mask_think_prefix=mask_think_prefix and t.kind == "main"
            )
        )
    return out
