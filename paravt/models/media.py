"""Frames → processor inputs, and token ids + media → forward-pass tensors.

Frames arrive decoded and resized by ``paravt.video``; the processor is always called with
``do_sample_frames=False`` and a ``VideoMetadata`` that reproduces the frames' REAL timestamps:
``fps = 1000`` and ``frames_indices = round(t * 1000)``, so Qwen3-VL's ``<t seconds>`` text
(``index / fps``, averaged over each temporal patch) is the frames' own time to the millisecond,
and ``total_num_frames`` is chosen so that ``sampled_fps`` (Qwen2.5-VL's ``second_per_grid_ts``)
equals the frames' sampling rate.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import torch

from paravt.errors import ModelError
from paravt.models.features import FEATURES, Item
from paravt.video.types import Frames

_MS = 1000.0

# Decoded frames come out of the video cache read-only; the processors only read them, so torch's
# "non-writable array" warning is noise here (copying every frame to silence it would cost memory).
warnings.filterwarnings(
    "ignore", message="The given NumPy array is not writable", category=UserWarning
)


def sampling_rate(frames: Frames) -> float:
    """Frames per second of the sample (1.0 for a single frame or a zero time span)."""
    ts = frames.timestamps
    span = ts[-1] - ts[0] if len(ts) > 1 else 0.0
    return (len(ts) - 1) / span if span > 0 else 1.0


def video_metadata(frames: Frames) -> Any:
    from transformers.video_utils import VideoMetadata

    rate = sampling_rate(frames)
    total = max(len(frames), int(round(len(frames) * _MS / rate)))
    return VideoMetadata(
        total_num_frames=total,
        fps=_MS,
        width=frames.width,
        height=frames.height,
        duration=total / _MS,
        frames_indices=[int(round(t * _MS)) for t in frames.timestamps],
    )


def processor_media_kwargs(videos: Sequence[Frames], images: Sequence[Frames]) -> dict[str, Any]:
    """Keyword arguments of ``processor(...)`` for these media (empty when there are none)."""
    kw: dict[str, Any] = {}
    if videos:
        kw.update(
            videos=[v.array for v in videos],
            video_metadata=[video_metadata(v) for v in videos],
            do_sample_frames=False,
        )
    if images:
        kw["images"] = [im.array[0] for im in images]
    return kw


def media_features(
    processor: Any, videos: Sequence[Frames], images: Sequence[Frames]
) -> dict[str, torch.Tensor]:
    """Pixel values and grids of the media, exactly as ``processor(text, videos, images)`` makes
    them;
    each item processed once while it is alive (``paravt.models.features``)."""
    out: dict[str, torch.Tensor] = {}
    if videos:

        def one_video(v: Frames) -> Item:
            vp = processor.video_processor(
                videos=[v.array],
                video_metadata=[video_metadata(v)],
                do_sample_frames=False,
                return_tensors="pt",
            )
            return vp["pixel_values_videos"], vp["video_grid_thw"]

        out["pixel_values_videos"], out["video_grid_thw"] = FEATURES.items(
            processor, videos, "video", one_video
        )
        if type(processor).__name__.startswith("Qwen2_5"):
            tps = processor.video_processor.temporal_patch_size
            out["second_per_grid_ts"] = torch.tensor([tps / sampling_rate(v) for v in videos])
    if images:

        def one_image(im: Frames) -> Item:
            ip = processor.image_processor(images=[im.array[0]], return_tensors="pt")
            return ip["pixel_values"], ip["image_grid_thw"]

        out["pixel_values"], out["image_grid_thw"] = FEATURES.items(
            processor, images, "image", one_image
        )
    return out


def _check_placeholders(
    ids: Sequence[int], token_id: int, grid: torch.Tensor | None, merge: int, kind: str
) -> None:
    n_ids = sum(1 for i in ids if i == token_id)
    n_media = 0 if grid is None else int((grid.prod(-1) // (merge * merge)).sum())
    if n_ids != n_media:
        raise ModelError(
            f"the token ids hold {n_ids} {kind} placeholder tokens but the {kind} media need "
            f"{n_media}; "
            "build ids with ChatCodec.encode_message from the same frames (never re-tokenize "
            "media spans)"
        )


def batch_inputs(
    processor: Any,
    seqs: Sequence[tuple[Sequence[int], Sequence[Frames], Sequence[Frames]]],
    *,
    pad_id: int,
    device: str | torch.device = "cpu",
    padding_side: Literal["left", "right"] = "left",
) -> dict[str, torch.Tensor]:
    """Padded forward inputs for several (ids, videos, images) sequences, media concatenated in
    sequence order; ``mm_token_type_ids`` is always set (1 image, 2 video, 0 text/pad). Left
    padding for generation; right padding for training passes (``paravt.rl.batch``)."""
    image_id = processor.image_token_id
    video_id = processor.video_token_id
    merge = processor.image_processor.merge_size
    width = max(len(ids) for ids, _, _ in seqs)
    input_ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)  # B×L
    attention = torch.zeros((len(seqs), width), dtype=torch.long)  # B×L
    all_videos = [v for _, vs, _ in seqs for v in vs]
    all_images = [im for _, _, ims in seqs for im in ims]
    for row, (ids, _, _) in enumerate(seqs):
        if len(ids):
            cols = slice(width - len(ids), width) if padding_side == "left" else slice(0, len(ids))
            input_ids[row, cols] = torch.tensor(list(ids), dtype=torch.long)
            attention[row, cols] = 1
    feats = media_features(processor, all_videos, all_images)
    for row, (ids, vs, ims) in enumerate(seqs):
        v0 = sum(len(s[1]) for s in seqs[:row])
        i0 = sum(len(s[2]) for s in seqs[:row])
        vgrid = feats["video_grid_thw"][v0 : v0 + len(vs)] if vs else None
        igrid = feats["image_grid_thw"][i0 : i0 + len(ims)] if ims else None
        _check_placeholders(ids, video_id, vgrid, merge, "video")
        _check_placeholders(ids, image_id, igrid, merge, "image")
    mm = torch.zeros_like(input_ids)  # B×L
    mm[input_ids == image_id] = 1
    mm[input_ids == video_id] = 2
    out = {"input_ids": input_ids, "attention_mask": attention, "mm_token_type_ids": mm, **feats}
    return {k: v.to(device) for k, v in out.items()}


def model_inputs(
    processor: Any,
    ids: Sequence[int],
    videos: Sequence[Frames] = (),
    images: Sequence[Frames] = (),
    *,
    device: str | torch.device = "cpu",
) -> dict[str, torch.Tensor]:
    """Forward-pass inputs of ONE sequence (input_ids, attention_mask, mm_token_type_ids, and
    pixel_values_videos / video_grid_thw / pixel_values / image_grid_thw when there are media)."""
    pad = processor.tokenizer.pad_token_id or 0
    return batch_inputs(processor, [(ids, videos, images)], pad_id=pad, device=device)


def sampling_log_softmax(
    logits: torch.Tensor, *, temperature: float = 1.0, suppress_ids: Sequence[int] = ()
) -> torch.Tensor:
    """log softmax(logits / temperature) in fp32 with ``suppress_ids`` removed (−inf): the
    distribution a generator that suppresses them samples from. logits N×V → N×V."""
    logits = logits.float()
    if suppress_ids:
        logits = logits.index_fill(
            -1,
            torch.tensor(list(suppress_ids), dtype=torch.long, device=logits.device),
            float("-inf"),
        )
    return torch.log_softmax(logits / (temperature if temperature > 0 else 1.0), dim=-1)  # N×V


def sequence_logprobs(
    model: Any,
    processor: Any,
    ids: Sequence[int],
    videos: Sequence[Frames],
    images: Sequence[Frames],
    positions: Sequence[int],
    *,
    temperature: float = 1.0,
    suppress_ids: Sequence[int] = (),
) -> torch.Tensor:
    """``log p(ids[t] | ids[:t])`` for each t in ``positions`` (t ≥ 1), from one forward pass, under
    ``softmax(logits / temperature)`` with ``suppress_ids`` removed (the distribution a generator
    that suppresses them samples from). Only the requested rows of the logits are upcast to fp32.
    Gradients flow when called outside ``torch.no_grad`` (trainers use it for the loss)."""
    if any(t < 1 or t >= len(ids) for t in positions):
        raise ModelError(f"positions must lie in [1, {len(ids) - 1}], got {list(positions)}")
    device = next(model.parameters()).device
    inputs = model_inputs(processor, ids, videos, images, device=device)
    pos = torch.tensor(list(positions), dtype=torch.long, device=device)  # P
    logits = model(**inputs).logits[0, pos - 1]  # P×V: token t is predicted at t-1
    logp = sampling_log_softmax(logits, temperature=temperature, suppress_ids=suppress_ids)  # P×V
    target = inputs["input_ids"][0, pos]  # P
    return logp.gather(-1, target[:, None])[:, 0]  # P
