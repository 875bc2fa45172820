"""Precomputed M-RoPE positions (paravt.rl.rope) on both tiny families: the same position ids,
logits and SFT loss as the model computing them inside its forward, computed once per row, and no
forward computing them again."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
import torch
from vl_families import SIZE_FACTOR

from paravt.agent.trajectory import Trajectory
from paravt.models.base import ChatMessage
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import LoadedPolicy
from paravt.rl import batch, rope
from paravt.rl.batch import micro_batches
from paravt.rl.sequence import build_sequence
from paravt.rl.sft import sft_backward
from paravt.video import sample_frames, write_video
from paravt.video.draw import solid


@pytest.fixture(scope="module")
def video_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = Path(tmp_path_factory.mktemp("rope")) / "v.mp4"
    write_video(
        path, [solid(64, 96, (30 + 12 * i, 90, 200 - 10 * i)) for i in range(16)], fps=2.0
    )  # 8 s
    return path


@pytest.fixture(autouse=True)
def _one_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        batch, "MAX_PAD_SHARE", 1.0
    )  # rows of different lengths share a micro-batch


def _rows(family: str, policy: LoadedPolicy, video_path: Path, media: str) -> list[Trajectory]:
    """SFT rows of different lengths: two videos in one row (an overview and a clip, non-square
    frames: h ≠ w positions), one video, or none."""
    codec = ChatCodec(policy.processor)
    f = SIZE_FACTOR[family]
    overview = sample_frames(video_path, 0.0, 8.0, nframes=8, max_pixels=64 * 96, size_factor=f)
    clip = sample_frames(video_path, 2.0, 4.0, nframes=3, max_pixels=64 * 96, size_factor=f)
    vids = {
        "video": [(overview, clip), (clip,), (overview,)],
        "text": [(), (), ()],
        "mixed": [(overview, clip), (), (clip,)],
    }[media]
    rows = []
    for i, vs in enumerate(vids):
        user = ChatMessage(
            "user",
            "".join("<video>\n" for _ in vs) + "Which colour?" + " more" * (3 * i),
            videos=vs,
        )
        msgs = [
            ChatMessage("system", "You are a helpful assistant."),
            user,
            ChatMessage("assistant", "<think>\nlook</think><answer>red" + " red" * i + "</answer>"),
        ]
        rows.append(build_sequence(msgs, codec, row_id=f"r{i}"))
    return rows


def _model_positions(policy: LoadedPolicy, mb: batch.MicroBatch) -> torch.Tensor:
    """What the model computes itself for the padded batch (the path without ``position_ids``)."""
    kw = {
        k: mb.inputs[k]
        for k in ("image_grid_thw", "video_grid_thw", "second_per_grid_ts")
        if k in mb.inputs
    }
    pos, _ = policy.model.model.get_rope_index(
        mb.inputs["input_ids"], mm_token_type_ids=mb.inputs["mm_token_type_ids"], **kw
    )
    return pos


@pytest.mark.parametrize("media", ["video", "text", "mixed"])
def test_precomputed_positions_give_the_models_own_positions_and_logits(
    family_policy, video_path, media
) -> None:
    family, policy = family_policy
    rows = _rows(family, policy, video_path, media)
    (plain,) = micro_batches(policy.processor, rows, 10_000)
    (given,) = micro_batches(policy.processor, rows, 10_000, model=policy.model)
    if media == "text":
        assert "position_ids" not in given.inputs  # no media: the model's 1-D default, as before
    else:
        torch.testing.assert_close(
            given.inputs["position_ids"], _model_positions(policy, plain), atol=0, rtol=0
        )
    with torch.no_grad():
        a = policy.model(**{k: v for k, v in plain.inputs.items() if k != "attention_mask"}).logits
        b = policy.model(**{k: v for k, v in given.inputs.items() if k != "attention_mask"}).logits
    torch.testing.assert_close(a, b, atol=0, rtol=0)  # the same positions: bit-identical logits


@pytest.mark.parametrize("media", ["video", "mixed"])
def test_sft_loss_and_gradients_are_unchanged(
    family_policy, video_path, media, monkeypatch
) -> None:
    family, policy = family_policy
    rows = _rows(family, policy, video_path, media)
    model = policy.model

    def loss_and_grads() -> tuple[float, list[torch.Tensor]]:
        model.zero_grad(set_to_none=True)
        out = sft_backward(model, policy.processor, rows)
        return out.loss, [p.grad.clone() for p in model.parameters() if p.grad is not None]

    given = loss_and_grads()
    monkeypatch.setattr(
        batch, "batch_positions", lambda *a, **k: None
    )  # the model computes them again
    plain = loss_and_grads()
    assert given[0] == plain[0]
    for x, y in zip(given[1], plain[1], strict=True):
        torch.testing.assert_close(x, y, atol=0, rtol=0)


def test_positions_are_computed_once_per_row_and_never_in_a_forward(
    family_policy, video_path, monkeypatch
) -> None:
    family, policy = family_policy
    rows = _rows(family, policy, video_path, "video")
    calls = []
    inner = type(policy.model.model).get_rope_index

    def counted(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        calls.append(args[0].shape[0])  # the batch size it was called on
        return inner(self, *args, **kwargs)

    monkeypatch.setattr(type(policy.model.model), "get_rope_index", counted)
    rope.warm(policy.model, policy.processor, rows)
    assert calls == [1, 1, 1]  # one call per row, each on the row alone
    for _ in range(3):  # three epochs of SFT
        sft_backward(policy.model, policy.processor, rows)
    assert calls == [1, 1, 1]  # the forwards took the rows' positions


def test_a_freed_row_leaves_the_cache(family_policy, video_path) -> None:
    family, policy = family_policy
    rows = _rows(family, policy, video_path, "video")
    rope.warm(policy.model, policy.processor, rows)
    before = len(rope._CACHE)
    del rows
    gc.collect()
    assert len(rope._CACHE) <= before - 3
