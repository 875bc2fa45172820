"""KV cache kept across turns: the next turn prefills only its new tokens (and encodes only its new
media), with the same tokens and logprobs as a full re-prefill; a weight update drops the cache."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from test_prefix_share import FAMILIES, _assert_same, _request, _run

from paravt.models.base import ChatMessage, GenOutput, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.models.hf.generator import HFGenerator
from paravt.protocol.tags import THINK_PREFIX
from paravt.video.types import Frames


def _next_turn(
    codec: ChatCodec, req: GenRequest, out: GenOutput, crop: Frames | None, seed: int
) -> GenRequest:
    """The main agent's next prompt as the episode builds it: appended, never re-rendered."""
    tool = ChatMessage(
        "tool",
        "<video>\nthe window 1.0-3.0 s" if crop is not None else "no frames: error",
        videos=(crop,) if crop is not None else (),
    )
    enc = codec.encode_message(tool)
    ids = (
        req.prompt_ids
        + out.token_ids
        + codec.close_turn(out.token_ids)
        + enc.ids
        + codec.generation_prompt(THINK_PREFIX)
    )
    return replace(
        req,
        prompt_ids=ids,
        messages=req.messages + (tool,),
        videos=req.videos + enc.videos,
        sampling=replace(req.sampling, seed=seed),
    )


@pytest.fixture(scope="module")
def pair(loaded_policy):  # type: ignore[no-untyped-def]
    return {
        f: (
            HFGenerator(loaded_policy(f), turn_cache_entries=8),
            HFGenerator(loaded_policy(f), share_prefill=False, turn_cache_entries=0),
        )
        for f in FAMILIES
    }


def _turn1(gen: HFGenerator, video: Frames, n: int = 3) -> list[GenRequest]:
    base = replace(
        _request(
            gen.codec,
            video,
            "What colour is the flash?",
            SamplingParams(temperature=1.0, max_new_tokens=10),
        ),
        keep_kv=True,
    )
    return [replace(base, sampling=replace(base.sampling, seed=50 + g)) for g in range(n)]


@pytest.mark.parametrize("family", FAMILIES)
def test_next_turn_prefills_only_its_new_tokens(family, pair, video_frames) -> None:
    cached, plain = pair[family]
    reqs = _turn1(cached, video_frames)
    first, _ = _run(cached, reqs)
    assert len(cached.prefiller.turns) == 3  # one kept cache per row
    crop = Frames(video_frames.array[2:6], video_frames.timestamps[2:6])
    nxt = [
        _next_turn(cached.codec, r, o, c, 900 + i)
        for i, (r, o, c) in enumerate(zip(reqs, first, [crop, None, crop]))
    ]
    with_cache, n_cached = _run(cached, nxt)
    full, n_full = _run(plain, nxt)
    _assert_same(with_cache, full)
    assert (n_cached, n_full) == (2, 5)  # only the two crops go through the vision tower
    for r, r2, o, out in zip(reqs, nxt, first, with_cache):
        kept = len(r.prompt_ids) + len(o.token_ids) - 1  # the last sampled token was never fed
        assert out.metrics["prefill_tokens"] == len(r2.prompt_ids) - kept
    assert {o.metrics["prefill_tokens"] for o in full} == {float(len(r.prompt_ids)) for r in nxt}


def test_a_weight_update_drops_kept_caches(pair, video_frames) -> None:
    cached, _ = pair["qwen3_vl"]
    reqs = _turn1(cached, video_frames, n=2)
    first, _ = _run(cached, reqs)
    assert len(cached.prefiller.turns) >= 2
    with torch.no_grad():
        list(cached.model.parameters())[-1].add_(0.0)  # an in-place update of the LAST parameter
        # (values unchanged here; a trainer may freeze the first ones, e.g. the vision tower)
    nxt = [_next_turn(cached.codec, r, o, None, 7) for r, o in zip(reqs, first)]
    outs, _ = _run(cached, nxt)
    assert [o.metrics["prefill_tokens"] for o in outs] == [float(len(r.prompt_ids)) for r in nxt]


@pytest.mark.parametrize("family", FAMILIES)
def test_kept_shared_and_fresh_rows_in_one_batch(family, pair, video_frames) -> None:
    """Two rows continue kept caches while a new group (two identical prompts, another question)
    starts in the same batch: every row equals its full re-prefill."""
    cached, plain = pair[family]
    reqs = _turn1(cached, video_frames, n=2)
    first, _ = _run(cached, reqs)
    nxt = [
        _next_turn(cached.codec, r, o, None, 300 + i) for i, (r, o) in enumerate(zip(reqs, first))
    ]
    new = _request(
        cached.codec,
        video_frames,
        "Count the flashes.",
        SamplingParams(temperature=1.0, max_new_tokens=10),
    )
    batch = [
        nxt[0],
        replace(new, sampling=replace(new.sampling, seed=1)),
        nxt[1],
        replace(new, sampling=replace(new.sampling, seed=2)),
    ]
    mixed, n_mixed = _run(cached, batch)
    full, _ = _run(plain, batch)
    _assert_same(mixed, full)
    assert n_mixed == 1  # the new group's overview, once; the kept rows encode nothing
    assert mixed[0].metrics["prefill_tokens"] < len(nxt[0].prompt_ids) / 2
    assert mixed[1].metrics["prefill_tokens"] == len(new.prompt_ids)
    assert {o.metrics["prefill_rows"] for o in mixed} == {3.0}
