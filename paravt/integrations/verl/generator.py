"""Our ``Generator`` over verl's LLM server client (tokens in; tokens + logprobs out).

Every request of one ``generate`` call is sent concurrently (``asyncio.gather``): verl's vLLM /
SGLang servers batch whatever is in flight, so the K sub-agents of a parallel turn are decoded
together, and so are the G episodes of a prompt running in the same worker. All requests of one
episode share a sticky ``request_id`` (verl routes them to one server; prefix caching then reuses
the main agent's growing context). Media go as verl expects them: images as PIL images, videos as
``(uint8 T×H×W×3 array, metadata dict)`` with the frames' real timestamps (``paravt.models.media``)
and ``do_sample_frames=False``; for SGLang the processor's features are sent instead of frames.

What is not covered: routed experts (MoE router replay) and preemption counts are dropped.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from paravt.models.base import FinishReason, GenOutput, GenRequest
from paravt.models.chat import ChatCodec
from paravt.models.media import media_features, video_metadata
from paravt.video.types import Frames

_METADATA_FIELDS = ("total_num_frames", "fps", "width", "height", "duration", "frames_indices")
MM_PROCESSOR_KWARGS: dict[str, Any] = {"do_sample_frames": False}


def verl_video(frames: Frames) -> tuple[Any, dict[str, Any]]:
    """One video as verl's rollout and trainer take it: (frames array, processor metadata)."""
    md = video_metadata(frames)
    return frames.array, {k: getattr(md, k) for k in _METADATA_FIELDS}


def verl_image(frames: Frames) -> Any:
    from PIL import Image

    return Image.fromarray(frames.array[0])


def verl_multi_modal_data(
    videos: Sequence[Frames], images: Sequence[Frames]
) -> dict[str, list[Any]]:
    """``AgentLoopOutput.multi_modal_data`` (verl recomputes pixel values from it for training)."""
    data: dict[str, list[Any]] = {}
    if videos:
        data["videos"] = [verl_video(v) for v in videos]
    if images:
        data["images"] = [verl_image(im) for im in images]
    return data


class VerlServerGenerator:
    """``paravt.models.base.Generator`` backed by ``AgentLoopBase.server_manager``."""

    def __init__(
        self,
        server_manager: Any,
        codec: ChatCodec,
        *,
        request_id: str,
        backend: str = "vllm",
        base_params: dict[str, Any] | None = None,
    ) -> None:
        self.server = server_manager
        self.codec = codec
        self.request_id = request_id
        self.backend = backend
        self.base_params = dict(base_params or {})

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def aclose(self) -> None:
        return None

    def _params(self, req: GenRequest) -> dict[str, Any]:
        s = req.sampling
        params = {
            **self.base_params,
            "temperature": s.temperature,
            "top_p": s.top_p,
            "max_tokens": s.max_new_tokens,
            "logprobs": True,
        }
        if s.temperature == 0:
            params.update(top_p=1.0, top_k=-1)
        return params

    def _media(self, req: GenRequest) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "image_data": [verl_image(im) for im in req.images] or None,
            "video_data": [verl_video(v) for v in req.videos] or None,
        }
        if req.videos:
            kw["mm_processor_kwargs"] = dict(MM_PROCESSOR_KWARGS)
            if self.backend == "sglang":
                feats = media_features(self.codec.processor, req.videos, ())
                payload = {
                    "format": "processor_output",
                    **{k: v for k, v in feats.items() if "video" in k or k == "second_per_grid_ts"},
                }
                kw["mm_processor_output"] = [payload]
        return kw

    async def _one(self, req: GenRequest) -> GenOutput:
        t0 = time.perf_counter()
        params = self._params(req)
        try:
            out = await self.server.generate(
                request_id=self.request_id,
                prompt_ids=list(req.prompt_ids),
                sampling_params=params,
                **self._media(req),
            )
        except Exception as err:  # noqa: BLE001 - one failed request is data for its episode
            return GenOutput((), (), "", "error", error=f"{type(err).__name__}: {err}")
        ids = tuple(int(t) for t in out.token_ids)
        if getattr(out, "stop_reason", None) == "aborted":
            return GenOutput((), (), "", "error", error="generation aborted by the rollout server")
        lps = tuple(float(x) for x in out.log_probs) if out.log_probs else (0.0,) * len(ids)
        reason: FinishReason
        if ids and ids[-1] in self.codec.stop_token_ids:
            reason = "stop"
        elif len(ids) >= params["max_tokens"]:
            reason = "length"
        else:
            reason = "stop"
        return GenOutput(
            ids,
            lps[: len(ids)],
            self.codec.decode(ids),
            reason,
            metrics={"latency_s": time.perf_counter() - t0},
        )
