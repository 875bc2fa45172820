"""The ``/v1/chat/completions`` body the openai backend sends, built so that the server's prompt
token ids equal the trajectory's (``ChatCodec``): what the server sees is what we train on.

- Video: ONE ``video_url`` part whose URL is ``data:video/jpeg;base64,<f1>,<f2>,…`` (vLLM's frame
  sequence format; every frame is a base64 JPEG, or PNG with ``image_format="png"``), plus the
  per-request ``media_io_kwargs["video"]`` built from the same ``VideoMetadata`` that
  ``paravt.models.media`` gives the local processor (``num_frames = -1`` keeps every frame; ``fps``,
  ``frames_indices``, ``total_num_frames``, ``duration``). The server then renders the same
  per-frame ``<t seconds>`` text and the same number of vision tokens as ``ChatCodec``; it must
  run with ``--trust-request-mm-kwargs``. vLLM takes ONE set of video kwargs per request: when a
  request holds videos whose metadata differ (the sequential mode's crops next to the overview),
  only ``num_frames = -1`` is sent and the server's prompt ids may differ from ours; the backend
  counts and logs such mismatches.
- Image: one ``image_url`` data URL.
- Tokens: ``return_token_ids`` asks vLLM for ``prompt_token_ids`` and the sampled ``token_ids``;
  ``logprobs`` for the sampled tokens' logprobs; ``top_k = -1`` and ``repetition_penalty = 1``
  so that a checkpoint's generation_config never changes the sampling distribution; a -100 logit
  bias on the vision placeholder tokens, which the hf backend suppresses too (a sampled one would
  break the next turn).
- ``VLLM_EXTRAS`` are the fields a strict OpenAI server may reject; ``strip_extras`` removes them
  (the backend does so after such a 400, and then records re-tokenised text).
- A ``tool`` message has role ``tool`` (the chat template wraps it in ``<tool_response>``). Its text
  was defused once by the episode (``tags.defuse_observation``), so the server tokenizes the same
  text ``ChatCodec`` encodes; ``defuse_control_text`` here is idempotent and only guards messages
  built elsewhere (a tool cannot forge control tokens); a forced
  ``response_prefix`` is a final assistant message continued with
  ``{"continue_final_message": true, "add_generation_prompt": false}``.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from PIL import Image

from paravt.models.base import ChatMessage, GenRequest
from paravt.models.media import video_metadata
from paravt.protocol.tags import defuse_control_text
from paravt.video.types import Frames

_MARKER_RE = re.compile(r"(<video>|<image>)")
VLLM_EXTRAS = ("top_k", "repetition_penalty", "return_token_ids", "media_io_kwargs")


def _encoded(pixels: np.ndarray, image_format: str) -> str:
    buf = io.BytesIO()
    opts = {"quality": 95} if image_format == "jpeg" else {}
    Image.fromarray(pixels).save(buf, format=image_format.upper(), **opts)
    return base64.b64encode(buf.getvalue()).decode()


def data_url(pixels: np.ndarray, image_format: str = "jpeg") -> str:
    return f"data:image/{image_format};base64," + _encoded(pixels, image_format)


def video_data_url(frames: Frames, image_format: str = "jpeg") -> str:
    """All frames of a video as one vLLM frame-sequence data URL (comma-separated base64 images)."""
    return "data:video/jpeg;base64," + ",".join(_encoded(f, image_format) for f in frames.array)


def video_io_kwargs(frames: Frames) -> dict[str, Any]:
    """vLLM's per-request video kwargs reproducing ``paravt.models.media.video_metadata``."""
    meta = video_metadata(frames)
    return {
        "num_frames": -1,
        "fps": float(meta.fps),
        "frames_indices": [int(i) for i in meta.frames_indices],
        "total_num_frames": int(meta.total_num_frames),
        "duration": float(meta.duration),
    }


def media_io_kwargs(videos: Sequence[Frames]) -> dict[str, Any] | None:
    """The request's ``media_io_kwargs`` (None without videos; see the module docstring when the
    videos' metadata differ)."""
    if not videos:
        return None
    each = [video_io_kwargs(v) for v in videos]
    same = all(k == each[0] for k in each[1:])
    return {"video": each[0] if same else {"num_frames": -1}}


def message_parts(msg: ChatMessage, image_format: str = "jpeg") -> list[dict[str, Any]]:
    """OpenAI content parts of one message: text, one ``video_url`` per video, one ``image_url``
    per image, in the order of the content's markers."""
    videos, images = iter(msg.videos), iter(msg.images)
    parts: list[dict[str, Any]] = []
    for piece in _MARKER_RE.split(msg.content):
        if piece == "<video>":
            parts.append(
                {
                    "type": "video_url",
                    "video_url": {"url": video_data_url(next(videos), image_format)},
                }
            )
        elif piece == "<image>":
            parts.append(
                {
                    "type": "image_url",
                    "image_url": {"url": data_url(next(images).array[0], image_format)},
                }
            )
        elif piece:
            parts.append({"type": "text", "text": piece})
    return parts


def chat_payload(
    req: GenRequest, model: str, image_format: str = "jpeg", suppress_ids: Sequence[int] = ()
) -> dict[str, Any]:
    """The ``/v1/chat/completions`` body of one request; ``suppress_ids`` get a -100 logit bias."""
    messages: list[dict[str, Any]] = []
    videos: list[Frames] = []
    for i, m in enumerate(req.messages):
        if m.role == "tool":  # tool output is data: the server must not read control tokens in it
            m = replace(m, content=defuse_control_text(m.content))
        content: Any = m.content if not (m.videos or m.images) else message_parts(m, image_format)
        entry: dict[str, Any] = {"role": m.role, "content": content}
        if m.role == "tool":
            entry["tool_call_id"] = f"call_{i}"
        messages.append(entry)
        videos.extend(m.videos)
    s = req.sampling
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "temperature": s.temperature,
        "top_p": s.top_p,
        "top_k": -1,
        "repetition_penalty": 1.0,
        "max_tokens": s.max_new_tokens,
        "logprobs": True,
        "return_token_ids": True,
        "stream": False,
    }
    io_kwargs = media_io_kwargs(videos)
    if io_kwargs is not None:
        body["media_io_kwargs"] = io_kwargs
    if suppress_ids:
        body["logit_bias"] = {str(i): -100.0 for i in suppress_ids}
    if s.seed is not None:
        body["seed"] = s.seed
    if req.response_prefix:
        messages.append({"role": "assistant", "content": req.response_prefix})
        body.update(continue_final_message=True, add_generation_prompt=False)
    return body


def strip_extras(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without the vLLM-only fields (``VLLM_EXTRAS``)."""
    return {k: v for k, v in body.items() if k not in VLLM_EXTRAS}
