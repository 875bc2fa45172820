"""Forward-pass inputs and sequence logprobs."""

from __future__ import annotations

import pytest
import torch

from paravt.errors import ModelError
from paravt.models.base import ChatMessage
from paravt.models.chat import ChatCodec
from paravt.models.media import (
    model_inputs,
    processor_media_kwargs,
    sampling_rate,
    sequence_logprobs,
    video_metadata,
)


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_model_inputs_equal_the_processors_own_tensors(family, loaded_policy, video_frames) -> None:
    proc = loaded_policy(family).processor
    codec = ChatCodec(proc)
    msg = ChatMessage("user", "<video>\nWhat colour?", videos=(video_frames,))
    ref = proc(
        text=[codec.render(msg)], return_tensors="pt", **processor_media_kwargs([video_frames], [])
    )
    ours = model_inputs(proc, codec.encode_message(msg).ids, [video_frames])
    for key in (
        "input_ids",
        "attention_mask",
        "mm_token_type_ids",
        "pixel_values_videos",
        "video_grid_thw",
    ):
        assert torch.equal(ours[key], torch.as_tensor(ref[key])), key
    assert (
        int((ours["mm_token_type_ids"] == 2).sum())
        == int((ours["input_ids"] == proc.video_token_id).sum())
        > 0
    )
    if family == "qwen2_5_vl":  # 2 fps frames, temporal patch 2 → 1 second per grid step
        assert ours["second_per_grid_ts"].tolist() == pytest.approx(
            torch.as_tensor(ref["second_per_grid_ts"]).tolist()
        )
        assert ours["second_per_grid_ts"].tolist() == pytest.approx([1.0])


def test_metadata_reproduces_the_frames_timestamps_and_rate(video_frames) -> None:
    md = video_metadata(video_frames)
    assert md.timestamps == pytest.approx(list(video_frames.timestamps), abs=1e-3)
    assert sampling_rate(video_frames) == pytest.approx(2.0)
    assert md.sampled_fps == pytest.approx(2.0, rel=1e-3)


def test_sequence_logprobs_score_each_token_given_its_prefix(loaded_policy) -> None:
    policy = loaded_policy("qwen3_vl")
    codec = ChatCodec(policy.processor)
    ids = codec.encode_message(ChatMessage("user", "The answer is A.")).ids
    got = sequence_logprobs(policy.model, policy.processor, ids, (), (), [3, len(ids) - 1])
    with torch.no_grad():  # reference: separate forward passes over each prefix
        ref = []
        for t in (3, len(ids) - 1):
            logits = policy.model(**model_inputs(policy.processor, ids[:t])).logits[0, -1]
            ref.append(torch.log_softmax(logits.float(), -1)[ids[t]].item())
    assert got.tolist() == pytest.approx(ref, abs=1e-5)
    assert got.requires_grad  # usable for the loss


def test_sequence_logprobs_reject_position_zero(loaded_policy) -> None:
    policy = loaded_policy("qwen3_vl")
    with pytest.raises(ModelError, match="positions"):
        sequence_logprobs(policy.model, policy.processor, (1, 2, 3), (), (), [0])
