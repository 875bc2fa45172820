"""HFGenerator: batching invariance, seeded sampling, logprobs, coalescing, errors."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import torch

from paravt.models.base import ChatMessage, Generator, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.models.hf.generator import HFGenerator
from paravt.models.media import model_inputs, sequence_logprobs
from paravt.protocol.tags import THINK_PREFIX
from paravt.video.types import Frames

FAMILIES = ["qwen2_5_vl", "qwen3_vl"]


def _requests(
    codec: ChatCodec, video: Frames, sampling: SamplingParams, n: int = 3
) -> list[GenRequest]:
    out = []
    for i in range(n):
        msgs = (
            ChatMessage("system", "You are a helpful assistant."),
            ChatMessage(
                "user", "<video>\n" + "What colour is the flash?" * (i + 1), videos=(video,)
            ),
        )
        enc = codec.encode_messages(msgs)
        ids = enc.ids + codec.generation_prompt(THINK_PREFIX)
        out.append(
            GenRequest(
                prompt_ids=ids,
                messages=msgs,
                videos=enc.videos,
                sampling=sampling,
                response_prefix=THINK_PREFIX,
            )
        )
    return out


@pytest.fixture(scope="module")
def generators(loaded_policy):
    return {f: HFGenerator(loaded_policy(f), max_batch=8) for f in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_greedy_equals_unbatched_greedy(family, generators, video_frames) -> None:
    gen = generators[family]
    assert isinstance(gen, Generator)
    reqs = _requests(gen.codec, video_frames, SamplingParams(temperature=0.0, max_new_tokens=12))
    batched = asyncio.run(gen.generate(reqs))
    single = [asyncio.run(gen.generate([r]))[0] for r in reqs]
    assert [o.token_ids for o in batched] == [o.token_ids for o in single]
    assert all(o.finish_reason in ("stop", "length") for o in batched)
    for a, b in zip(batched, single):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-4)
    vision = set(gen.codec.vision_token_ids)
    assert not any(t in vision for o in batched for t in o.token_ids)


def test_seeded_sampling_is_reproducible_and_seed_dependent(generators, video_frames) -> None:
    gen = generators["qwen3_vl"]

    def run(seed: int) -> list[tuple[int, ...]]:
        reqs = _requests(
            gen.codec, video_frames, SamplingParams(temperature=1.0, max_new_tokens=16, seed=seed)
        )
        return [o.token_ids for o in asyncio.run(gen.generate(reqs))]

    assert run(7) == run(7)
    assert run(7) != run(8)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logprobs_are_the_sampling_distribution_of_a_separate_forward_pass(
    temperature, generators, video_frames
) -> None:
    gen = generators["qwen3_vl"]
    req = _requests(
        gen.codec,
        video_frames,
        SamplingParams(temperature=temperature, max_new_tokens=10, seed=1),
        n=1,
    )[0]
    out = asyncio.run(gen.generate([req]))[0]
    ids = req.prompt_ids + out.token_ids
    inputs = model_inputs(gen.policy.processor, ids, req.videos)
    with torch.no_grad():
        logits = gen.model(**inputs).logits[0].float()  # L×V
    logits[:, list(gen.codec.vision_token_ids)] = float("-inf")  # suppressed at generation
    n0 = len(req.prompt_ids)
    steps = logits[n0 - 1 : n0 - 1 + len(out.token_ids)] / temperature  # N×V
    expected = torch.log_softmax(steps, -1).gather(-1, torch.tensor(out.token_ids)[:, None])[:, 0]
    np.testing.assert_allclose(out.logprobs, expected.numpy(), atol=1e-4)
    if temperature == 1.0:  # and then they equal the trainer's recomputation (no suppression there)
        pos = list(range(n0, len(ids)))
        with torch.no_grad():
            seq = sequence_logprobs(gen.model, gen.policy.processor, ids, req.videos, (), pos)
        assert torch.all(seq <= expected + 1e-5)  # suppression only removes mass from the softmax


def test_max_new_tokens_per_row_cuts_with_length_finish(generators, video_frames) -> None:
    gen = generators["qwen2_5_vl"]
    long, short = _requests(
        gen.codec, video_frames, SamplingParams(temperature=0.0, max_new_tokens=20), n=2
    )
    short = GenRequest(
        prompt_ids=long.prompt_ids,
        messages=long.messages,
        videos=long.videos,
        sampling=SamplingParams(temperature=0.0, max_new_tokens=3),
    )
    a, b = asyncio.run(gen.generate([long, short]))
    assert b.token_ids == a.token_ids[:3] and len(b.logprobs) == len(b.token_ids)
    if gen.codec.im_end_id not in b.token_ids:
        assert b.finish_reason == "length"


def test_concurrent_calls_are_coalesced_into_one_batch(generators, video_frames) -> None:
    gen = generators["qwen3_vl"]
    reqs = _requests(
        gen.codec, video_frames, SamplingParams(temperature=0.0, max_new_tokens=4), n=4
    )

    async def main():
        return await asyncio.gather(*(gen.generate([r]) for r in reqs))

    outs = [o[0] for o in asyncio.run(main())]
    assert [o.metrics["batch_size"] for o in outs] == [4.0] * 4


def test_a_bad_request_becomes_an_error_output_and_the_others_succeed(
    generators, video_frames
) -> None:
    gen = generators["qwen3_vl"]
    good = _requests(
        gen.codec, video_frames, SamplingParams(temperature=0.0, max_new_tokens=4), n=1
    )[0]
    bad = GenRequest(
        prompt_ids=good.prompt_ids,
        messages=good.messages,
        videos=(),  # pads without media
        sampling=good.sampling,
    )
    out_good, out_bad = asyncio.run(gen.generate([good, bad]))
    assert out_good.finish_reason in ("stop", "length") and out_good.token_ids
    assert out_bad.finish_reason == "error" and "placeholder" in (out_bad.error or "")
    assert out_bad.token_ids == () and out_bad.logprobs == ()
