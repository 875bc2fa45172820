"""HFGenerator.prefill_threads (issue 14.4): the prefill forward runs with the given torch threads,
the decode steps with the caller's, the caller's count is restored afterwards (also on failure),
and the outputs equal a run without it (float tolerance)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import torch

from paravt.models.base import ChatMessage, GenRequest, SamplingParams
from paravt.models.hf.generator import HFGenerator
from paravt.protocol.tags import THINK_PREFIX


def _requests(gen: HFGenerator, video, n: int = 3, seed: int | None = None) -> list[GenRequest]:
    out = []
    for i in range(n):
        msgs = (
            ChatMessage("system", "Summarise."),
            ChatMessage("user", "<video>\n" + "Colour?" * (i + 1), videos=(video,)),
        )
        enc = gen.codec.encode_messages(msgs)
        sampling = SamplingParams(
            temperature=0.0 if seed is None else 1.0,
            max_new_tokens=8,
            seed=None if seed is None else seed + i,
        )
        out.append(
            GenRequest(
                prompt_ids=enc.ids + gen.codec.generation_prompt(THINK_PREFIX),
                messages=msgs,
                videos=enc.videos,
                sampling=sampling,
                response_prefix=THINK_PREFIX,
            )
        )
    return out


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("seed", [None, 7])
def test_prefill_runs_with_its_threads_and_decode_with_the_callers(
    loaded_policy, video_frames, one_thread, seed
):
    policy = loaded_policy("qwen3_vl")
    plain, threaded = HFGenerator(policy), HFGenerator(policy, prefill_threads=2)
    seen: list[tuple[int, int]] = []  # (tokens in the forward, torch threads) per model forward

    def record(module, args, kwargs):  # noqa: ANN001, ANN202
        ids = kwargs.get("input_ids")
        seen.append((0 if ids is None else ids.shape[1], torch.get_num_threads()))

    handle = policy.model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        outs = asyncio.run(threaded.generate(_requests(threaded, video_frames, seed=seed)))
    finally:
        handle.remove()
    assert seen[0][0] > 1 and seen[0][1] == 2  # the prefill: the whole prompt, 2 threads
    assert len(seen) > 2 and all(
        n == 1 and t == 1 for n, t in seen[1:]
    )  # decode steps: 1 token, 1 thread
    assert torch.get_num_threads() == 1
    ref = asyncio.run(plain.generate(_requests(plain, video_frames, seed=seed)))
    assert [o.token_ids for o in outs] == [o.token_ids for o in ref]
    for a, b in zip(outs, ref):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-4)


def test_threads_are_restored_when_a_batch_fails(loaded_policy, video_frames, one_thread):
    gen = HFGenerator(loaded_policy("qwen3_vl"), prefill_threads=2)
    bad = GenRequest(
        prompt_ids=(1, 2, 3),
        messages=(),
        videos=(video_frames,),
        sampling=SamplingParams(max_new_tokens=2),
    )
    out = gen.run_batch([bad])
    assert out[0].finish_reason == "error" and torch.get_num_threads() == 1
