"""ChatCodec: per-message encodings concatenate to the chat template's rendering
(docs/ARCHITECTURE.md §3)."""

from __future__ import annotations

import numpy as np
import pytest

from paravt.errors import ModelError
from paravt.models.base import ChatMessage
from paravt.models.chat import ChatCodec, to_template_messages
from paravt.models.media import processor_media_kwargs
from paravt.protocol.tags import (
    THINK_PREFIX,
    render_crop_call,
    render_result_line,
    render_tool_turn,
)
from paravt.video.types import Frames

FAMILIES = ["qwen2_5_vl", "qwen3_vl"]


def _conversation(video: Frames) -> list[ChatMessage]:
    calls = [render_crop_call(0, 2), render_crop_call(2, 3), render_crop_call(1.5, 3.5)]
    results = "\n".join(
        render_result_line(i + 1, s, e, f"A red flash at {s} seconds.")
        for i, (s, e) in enumerate([(0, 2), (2, 3), (1.5, 3.5)])
    )
    return [
        ChatMessage("system", "You are a helpful assistant."),
        ChatMessage(
            "user", "<video>\nWhat colour is the flash? Options: A. red B. blue", videos=(video,)
        ),
        ChatMessage("assistant", render_tool_turn("I need to look closer at the video.", calls)),
        ChatMessage("tool", results),
        ChatMessage("assistant", "<think>\nThe flash is red.\n</think>\n<answer>A</answer>"),
    ]


@pytest.mark.parametrize("family", FAMILIES)
def test_message_encodings_concatenate_to_the_template_rendering(
    family, loaded_policy, video_frames
) -> None:
    proc = loaded_policy(family).processor
    codec = ChatCodec(proc)
    conv = _conversation(video_frames)
    text = proc.apply_chat_template(to_template_messages(conv), tokenize=False)
    golden = proc(text=[text], **processor_media_kwargs([video_frames], []))["input_ids"][0]
    pieces = codec.encode_messages(conv)
    assert list(pieces.ids) == [int(i) for i in golden]
    assert pieces.videos == (video_frames,)
    n_pads = sum(1 for i in pieces.ids if i == proc.video_token_id)
    assert n_pads > 0


@pytest.mark.parametrize("family", FAMILIES)
def test_generation_prompt_sampled_ids_and_close_turn_rebuild_the_assistant_message(
    family, loaded_policy
) -> None:
    codec = ChatCodec(loaded_policy(family).processor)
    answer = "The flash is red.\n</think>\n<answer>A</answer>"
    sampled = codec.encode_text(answer) + (codec.im_end_id,)  # what a generator returns on 'stop'
    rebuilt = codec.generation_prompt(THINK_PREFIX) + sampled + codec.close_turn(sampled)
    assert rebuilt == codec.encode_message(ChatMessage("assistant", THINK_PREFIX + answer)).ids
    # a 'length'-truncated response gets the whole end of turn as scaffolding
    assert codec.close_turn(sampled[:-1]) == (codec.im_end_id, *codec.encode_text("\n"))


def test_qwen3_video_text_carries_the_frames_real_timestamps(loaded_policy, video_frames) -> None:
    codec = ChatCodec(loaded_policy("qwen3_vl").processor)
    enc = codec.encode_message(ChatMessage("user", "<video>", videos=(video_frames,)))
    text = codec.decode(enc.ids, skip_special_tokens=False)
    ts = (
        video_frames.timestamps
    )  # 2 fps: 0.0, 0.5, 1.0, ... ; pairs are averaged per temporal patch
    expected = [f"<{(ts[i] + ts[i + 1]) / 2:.1f} seconds>" for i in range(0, len(ts), 2)]
    assert [m for m in expected if m in text] == expected
    assert "<0.2 seconds>" in text  # (0.0 + 0.5) / 2 = 0.25 → "0.2"


def test_tool_message_is_a_user_turn_wrapped_in_tool_response(loaded_policy) -> None:
    codec = ChatCodec(loaded_policy("qwen3_vl").processor)
    ids = codec.encode_message(ChatMessage("tool", "[1] 00:00–00:02: red")).ids
    assert codec.decode(ids, skip_special_tokens=False) == (
        "<|im_start|>user\n<tool_response>\n[1] 00:00–00:02: red\n</tool_response><|im_end|>\n"
    )


def test_protocol_tags_and_special_tokens_are_single_tokens(loaded_policy) -> None:
    codec = ChatCodec(loaded_policy("qwen2_5_vl").processor)
    for tag in (
        "<think>",
        "</think>",
        "<tool_call>",
        "</tool_call>",
        "<answer>",
        "</answer>",
        "<tool_response>",
        "<|im_start|>",
        "<|im_end|>",
        "<|video_pad|>",
    ):
        assert len(codec.encode_text(tag)) == 1, tag
    assert (
        codec.decode(codec.encode_text("<think>\nhi\n</think><|im_end|>"))
        == "<think>\nhi\n</think>"
    )


def test_marker_count_mismatch_is_a_clear_error(loaded_policy, video_frames) -> None:
    codec = ChatCodec(loaded_policy("qwen3_vl").processor)
    with pytest.raises(ModelError, match="one marker per media item"):
        codec.encode_message(ChatMessage("user", "no marker here", videos=(video_frames,)))


def test_image_message_expands_image_pads(loaded_policy) -> None:
    proc = loaded_policy("qwen2_5_vl").processor
    codec = ChatCodec(proc)
    img = Frames(array=np.zeros((1, 56, 56, 3), dtype=np.uint8), timestamps=(0.0,))
    enc = codec.encode_message(ChatMessage("user", "<image>look", images=(img,)))
    # 56x56 at patch 14 = 4x4 patches, merged 2x2 → 4 image tokens
    assert sum(1 for i in enc.ids if i == proc.image_token_id) == 4
