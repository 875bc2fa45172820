"""Continuous batching (``HFGenerator(continuous=True)``): the same tokens and logprobs as the
window batcher for a mixed stream of main agents and sub-agents of different lengths arriving while
others decode; rows join and leave between forwards, identical prompts still share one prefill, and
a kept
row cache still serves the next turn."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from test_prefix_share import FAMILIES, _assert_same, _request, _videos_encoded
from test_turn_cache import _next_turn

from paravt.models.base import GenOutput, GenRequest, SamplingParams
from paravt.models.hf.generator import HFGenerator
from paravt.video.types import Frames


@pytest.fixture(scope="module")
def engines(loaded_policy):  # type: ignore[no-untyped-def]
    return {
        f: (
            HFGenerator(loaded_policy(f), continuous=True, turn_cache_entries=8),
            HFGenerator(loaded_policy(f), turn_cache_entries=8),
        )
        for f in FAMILIES
    }


def _mixed(gen: HFGenerator, video: Frames, temperature: float) -> list[list[GenRequest]]:
    """Three arrivals: two main agents (one prompt, own seeds, 14 tokens, kept caches), then the K =
    3
    sub-agents of a turn on crops (6 tokens), then a main agent on another question (9 tokens)."""
    main = replace(
        _request(
            gen.codec,
            video,
            "What colour is the flash?",
            SamplingParams(temperature=temperature, max_new_tokens=14),
        ),
        keep_kv=True,
    )
    crops = [Frames(video.array[i : i + 3], video.timestamps[i : i + 3]) for i in (0, 2, 5)]
    subs = [
        _request(
            gen.codec,
            c,
            f"Describe window {i}.",
            SamplingParams(temperature=temperature, max_new_tokens=6),
        )
        for i, c in enumerate(crops)
    ]
    other = _request(
        gen.codec,
        video,
        "How many flashes are there?",
        SamplingParams(temperature=temperature, max_new_tokens=9),
    )
    seeded = [
        [replace(r, sampling=replace(r.sampling, seed=7 + 10 * a + i)) for i, r in enumerate(group)]
        for a, group in enumerate([[main, main], subs, [other]])
    ]
    return seeded


async def _staggered(
    gen: HFGenerator, arrivals: list[list[GenRequest]], gap: int
) -> list[list[GenOutput]]:
    """Arrival i comes once the engine has run ``i * gap`` forwards since the first (while the first
    rows still decode)."""
    base = gen.decode_stats().forwards

    async def call(i: int, reqs: list[GenRequest]) -> list[GenOutput]:
        while gen.decode_stats().forwards - base < i * gap:
            await asyncio.sleep(0.001)
        return await gen.generate(reqs)

    outs = await asyncio.gather(*(call(i, r) for i, r in enumerate(arrivals)))
    await gen.aclose()
    return list(outs)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_mixed_arrivals_equal_the_window_batcher(
    family, temperature, engines, video_frames
) -> None:
    cont, batch = engines[family]
    arrivals = _mixed(cont, video_frames, temperature)
    before = cont.decode_stats()
    got = asyncio.run(_staggered(cont, arrivals, 3))
    stats = cont.decode_stats()
    want = [batch.run_batch(a) for a in arrivals]  # each arrival alone: no other row in its batch
    for g, w in zip(got, want, strict=True):
        assert all(o.finish_reason in ("stop", "length") for o in g), [o.error for o in g]
        _assert_same(g, w)
    lengths = [len(o.token_ids) for g in got for o in g]
    assert len(set(lengths)) > 1  # rows of different lengths left at different forwards
    forwards, rows = stats.forwards - before.forwards, stats.rows - before.rows
    assert rows == sum(lengths)  # every forward advanced each live row by one token
    assert forwards < rows / 2  # the arrivals decoded together (alone: one forward per token)
    assert (
        max(o.metrics["batch_size"] for g in got for o in g) > 2.0
    )  # later arrivals joined live rows


@pytest.mark.parametrize("family", FAMILIES)
def test_identical_prompts_share_one_prefill_and_kept_caches_serve_the_next_turn(
    family, engines, video_frames
) -> None:
    cont, batch = engines[family]
    first = _mixed(cont, video_frames, 1.0)[0] * 2  # 4 rollouts of one prompt
    first = [replace(r, sampling=replace(r.sampling, seed=300 + g)) for g, r in enumerate(first)]
    with _videos_encoded(cont) as counts:
        outs = asyncio.run(_staggered(cont, [first], 0))[0]
    assert sum(counts) == 1 and {o.metrics["prefill_rows"] for o in outs} == {1.0}
    _assert_same(outs, batch.run_batch(first))
    crop = Frames(video_frames.array[1:4], video_frames.timestamps[1:4])
    nxt = [_next_turn(cont.codec, r, o, crop, 900 + i) for i, (r, o) in enumerate(zip(first, outs))]
    again = asyncio.run(_staggered(cont, [nxt], 0))[0]
    for r, r2, o, out in zip(first, nxt, outs, again, strict=True):
        assert out.metrics["prefill_tokens"] == len(r2.prompt_ids) - (
            len(r.prompt_ids) + len(o.token_ids) - 1
        )
    plain = HFGenerator(cont.policy, share_prefill=False, turn_cache_entries=0)
    _assert_same(again, plain.run_batch(nxt))


def test_unseeded_sampling_goes_the_batch_path(engines, video_frames) -> None:
    cont, _ = engines["qwen3_vl"]
    req = _request(
        cont.codec, video_frames, "What colour?", SamplingParams(temperature=1.0, max_new_tokens=5)
    )
    greedy = replace(req, sampling=SamplingParams(temperature=0.0, max_new_tokens=5))
    before = cont.decode_stats()
    unseeded, alongside = asyncio.run(_staggered(cont, [[req], [greedy]], 0))
    assert unseeded[0].finish_reason in ("stop", "length") and alongside[0].finish_reason in (
        "stop",
        "length",
    )
    assert len(unseeded[0].token_ids) == len(unseeded[0].logprobs) > 0
    assert cont.decode_stats().rows - before.rows == len(unseeded[0].token_ids) + len(
        alongside[0].token_ids
    )
