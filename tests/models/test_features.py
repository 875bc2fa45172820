"""Each media item is run through the vision processor once (paravt.models.features, issue 14.4):
per-item outputs equal the processor's stacked ones bit for bit, the codec's encode leaves them for
the forward inputs, and a different Frames object is never served another one's features."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

from paravt.models.base import ChatMessage
from paravt.models.chat import ChatCodec
from paravt.models.features import FeatureCache
from paravt.models.media import media_features, model_inputs, video_metadata
from paravt.video.types import Frames


class CountingVideoProcessor:
    """Forwards to the real video processor and counts the videos it was given."""

    def __init__(self, real) -> None:
        self.real, self.videos = real, 0

    def __call__(self, *args, **kwargs):
        self.videos += len(kwargs.get("videos") or args[0])
        return self.real(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self.real, name)


def _other(frames: Frames) -> Frames:
    return Frames(array=np.ascontiguousarray(255 - frames.array), timestamps=frames.timestamps)


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_per_item_features_equal_the_stacked_processor_output(
    family, loaded_policy, video_frames
) -> None:
    proc = loaded_policy(family).processor
    videos = [video_frames, _other(video_frames), video_frames]
    stacked = proc.video_processor(
        videos=[v.array for v in videos],
        video_metadata=[video_metadata(v) for v in videos],
        do_sample_frames=False,
        return_tensors="pt",
    )
    ours = media_features(proc, videos, [])
    assert torch.equal(ours["pixel_values_videos"], stacked["pixel_values_videos"])
    assert torch.equal(ours["video_grid_thw"], stacked["video_grid_thw"])


def test_a_video_encoded_by_the_codec_is_not_processed_again(
    loaded_policy, video_frames, monkeypatch
) -> None:
    proc = loaded_policy("qwen3_vl").processor
    spy = CountingVideoProcessor(proc.video_processor)
    monkeypatch.setattr(proc, "video_processor", spy)
    frames = Frames(array=video_frames.array.copy(), timestamps=video_frames.timestamps)
    msg = ChatMessage("user", "<video>\nWhat colour?", videos=(frames,))
    ids = ChatCodec(proc).encode_message(msg).ids
    assert spy.videos == 1
    first = model_inputs(proc, ids, [frames])
    again = model_inputs(proc, ids, [frames])
    assert spy.videos == 1  # the codec's processing served both forward inputs
    twin = Frames(
        array=frames.array.copy(), timestamps=frames.timestamps
    )  # same pixels, another object
    other = model_inputs(proc, ids, [twin])
    assert spy.videos == 2
    for got in (again, other):
        assert torch.equal(got["pixel_values_videos"], first["pixel_values_videos"])


def test_the_cache_is_bounded_and_forgets_freed_frames(loaded_policy, video_frames) -> None:
    proc = loaded_policy("qwen3_vl").processor
    cache = FeatureCache(max_items=4, max_bytes=10**9)

    def item(frames: Frames) -> tuple[torch.Tensor, torch.Tensor]:
        out = media_features(proc, [frames], [])
        return out["pixel_values_videos"], out["video_grid_thw"]

    many = [_other(video_frames) for _ in range(6)]
    cache.items(proc, many, "video", item)
    assert (
        len(cache) == 4 and cache.get(proc, many[0], "video") is None
    )  # least recently used: dropped
    assert cache.get(proc, many[-1], "video") is not None
    per_item = cache.nbytes // 4
    del many[-1]
    gc.collect()
    assert len(cache) == 3 and cache.nbytes == 3 * per_item  # a freed Frames leaves the cache
    small = FeatureCache(max_items=64, max_bytes=2 * per_item)
    small.items(proc, many, "video", item)
    assert len(small) == 2 and small.nbytes <= 2 * per_item
