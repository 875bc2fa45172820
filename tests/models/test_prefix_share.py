"""Shared prefill of identical prompts: same tokens and logprobs as independent prefills, with the
vision tower and the prefill run once per distinct prompt."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import pytest

from paravt.models.base import ChatMessage, GenOutput, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.models.hf.generator import HFGenerator
from paravt.models.hf.prefix_share import share_plan
from paravt.protocol.tags import THINK_PREFIX
from paravt.video.types import Frames

FAMILIES = ["qwen2_5_vl", "qwen3_vl"]


def _request(
    codec: ChatCodec, video: Frames, question: str, sampling: SamplingParams
) -> GenRequest:
    msgs = (
        ChatMessage("system", "You are a helpful assistant."),
        ChatMessage("user", "<video>\n" + question, videos=(video,)),
    )
    enc = codec.encode_messages(msgs)
    return GenRequest(
        prompt_ids=enc.ids + codec.generation_prompt(THINK_PREFIX),
        messages=msgs,
        videos=enc.videos,
        sampling=sampling,
        response_prefix=THINK_PREFIX,
    )


@contextmanager
def _videos_encoded(gen: HFGenerator) -> Iterator[list[int]]:
    """Counts the media items the vision tower encodes (rows of its grid_thw argument)."""
    counts: list[int] = []

    def hook(_module, args, kwargs, _out) -> None:  # type: ignore[no-untyped-def]
        grid = kwargs.get("grid_thw", args[1] if len(args) > 1 else None)
        counts.append(int(grid.shape[0]))

    handle = gen.model.model.visual.register_forward_hook(hook, with_kwargs=True)
    try:
        yield counts
    finally:
        handle.remove()


def _run(gen: HFGenerator, reqs: list[GenRequest]) -> tuple[list[GenOutput], int]:
    with _videos_encoded(gen) as counts:
        outs = gen.run_batch(reqs)
    assert all(o.finish_reason in ("stop", "length") for o in outs), [o.error for o in outs]
    return outs, sum(counts)


def _assert_same(shared: list[GenOutput], alone: list[GenOutput]) -> None:
    assert [o.token_ids for o in shared] == [o.token_ids for o in alone]
    for a, b in zip(shared, alone):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-4)


@pytest.fixture(scope="module")
def pair(loaded_policy):  # type: ignore[no-untyped-def]
    return {
        f: (
            HFGenerator(loaded_policy(f), max_batch=16),
            HFGenerator(loaded_policy(f), max_batch=16, share_prefill=False),
        )
        for f in FAMILIES
    }


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_g_rollouts_of_one_prompt_equal_independent_prefills(
    family, temperature, pair, video_frames
) -> None:
    shared_gen, plain_gen = pair[family]
    base = _request(
        shared_gen.codec,
        video_frames,
        "What colour is the flash?",
        SamplingParams(temperature=temperature, max_new_tokens=12),
    )
    reqs = [replace(base, sampling=replace(base.sampling, seed=100 + g)) for g in range(8)]
    shared, n_shared = _run(shared_gen, reqs)
    alone, n_alone = _run(plain_gen, reqs)
    _assert_same(shared, alone)
    assert (n_shared, n_alone) == (1, 8)  # the overview goes through the vision tower once
    assert {o.metrics["prefill_rows"] for o in shared} == {1.0}
    assert {o.metrics["prefill_rows"] for o in alone} == {8.0}
    if temperature > 0:  # the rows did sample independently (per-row seeds)
        assert len({o.token_ids for o in shared}) > 1


@pytest.mark.parametrize("family", FAMILIES)
def test_mixed_batch_shares_per_distinct_prompt(family, pair, video_frames) -> None:
    """Three distinct prompts of different lengths (left padding) repeated 3, 2 and 1 times, each
    row with its own seed: every row equals its unshared twin."""
    shared_gen, plain_gen = pair[family]
    s = SamplingParams(temperature=0.8, max_new_tokens=10)
    qs = [
        "Where?",
        "When does the digit appear in the video?",
        "Count the flashes, then answer briefly.",
    ]
    reqs = [
        replace(
            r := _request(shared_gen.codec, video_frames, qs[k], s),
            sampling=replace(r.sampling, seed=7 * i),
        )
        for i, k in enumerate([0, 1, 0, 2, 1, 0])
    ]
    shared, n_shared = _run(shared_gen, reqs)
    alone, n_alone = _run(plain_gen, reqs)
    _assert_same(shared, alone)
    assert (n_shared, n_alone) == (3, 6)
    assert {o.metrics["prefill_rows"] for o in shared} == {3.0}


def test_share_plan_keys_on_token_ids_and_media_content(video_frames) -> None:
    codec_free = SamplingParams(max_new_tokens=4)
    copy = Frames(video_frames.array.copy(), video_frames.timestamps)  # equal content, other object
    other = video_frames.array.copy()
    other[0, 0, 0, 0] ^= 1  # one sub-pixel differs
    changed = Frames(other, video_frames.timestamps)
    shifted = Frames(video_frames.array, tuple(t + 0.5 for t in video_frames.timestamps))

    def req(ids: tuple[int, ...], video: Frames) -> GenRequest:
        return GenRequest(prompt_ids=ids, messages=(), videos=(video,), sampling=codec_free)

    a = req((1, 2, 3), video_frames)
    assert share_plan([a, req((1, 2, 3), copy), a]) == ([0], [0, 0, 0])
    assert (
        share_plan(
            [a, req((1, 2, 3), changed), req((1, 2, 3), shifted), req((1, 2, 4), video_frames)]
        )
        is None
    )
    assert share_plan([a, req((1, 2, 3), changed), a]) == ([0, 1], [0, 1, 0])
