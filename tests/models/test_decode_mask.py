"""The one-op decode-step mask (``paravt_sdpa``): the same mask as transformers' ``sdpa_mask``,
taken on every decode step of a padded batch, and bit-identical generations."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from unittest import mock

import pytest
import torch
from transformers import masking_utils

from paravt.models.base import ChatMessage, GenRequest, SamplingParams
from paravt.models.hf.decode_mask import NAME, decode_step_mask
from paravt.models.hf.generator import HFGenerator
from paravt.models.hf.loading import load_policy

FAMILIES = ["qwen2_5_vl", "qwen3_vl"]


def _left_padded(batch: int, length: int, gen: torch.Generator) -> torch.Tensor:
    pads = torch.randint(0, length // 2, (batch,), generator=gen)
    pads[torch.randint(0, batch, (1,), generator=gen)] = 0  # the longest row is never padded
    return torch.arange(length)[None, :] >= pads[:, None]  # B×L bool


def _same(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))


@pytest.mark.parametrize("seed", range(6))
def test_decode_step_mask_equals_sdpa_mask(seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    batch, length = 1 + seed % 4, 5 + 7 * seed
    for mask in (_left_padded(batch, length, gen), torch.ones(batch, length, dtype=torch.bool)):
        args = {
            "batch_size": batch,
            "q_length": 1,
            "kv_length": length,
            "q_offset": length - 1,
            "attention_mask": mask,
        }
        assert _same(decode_step_mask(**args), masking_utils.sdpa_mask(**args))
    padded = _left_padded(batch, length, gen)
    assert decode_step_mask(
        batch, 1, length, length - 1, attention_mask=padded
    ) is not None or bool(padded.all())


@pytest.mark.parametrize("case", ["prefill", "sliding", "offset", "no_mask"])
def test_every_other_call_goes_to_sdpa_mask(case: str) -> None:
    gen = torch.Generator().manual_seed(1)
    mask = _left_padded(3, 12, gen)
    args: dict = {
        "batch_size": 3,
        "q_length": 1,
        "kv_length": 12,
        "q_offset": 11,
        "attention_mask": mask,
    }
    if case == "prefill":
        args.update(q_length=12, q_offset=0)
    elif case == "sliding":
        args.update(local_size=4)
    elif case == "offset":  # a query that is not the last position: the causal part matters
        args.update(q_offset=5)
    else:
        args.update(attention_mask=None)
    with mock.patch.object(masking_utils, "sdpa_mask", wraps=masking_utils.sdpa_mask) as spy:
        got = decode_step_mask(**args)
    assert spy.call_count == 1
    assert _same(got, masking_utils.sdpa_mask(**args))


@contextmanager
def _count_sdpa_mask() -> Iterator[mock.MagicMock]:
    """Counts calls of transformers' ``sdpa_mask``, whether reached by name or through the
    ``sdpa`` entry of the mask registry."""
    spy = mock.MagicMock(wraps=masking_utils.sdpa_mask)
    with (
        mock.patch.object(masking_utils, "sdpa_mask", spy),
        mock.patch.dict(masking_utils.ALL_MASK_ATTENTION_FUNCTIONS._global_mapping, {"sdpa": spy}),
    ):
        yield spy


def _padded_requests(codec, frames, sampling: SamplingParams) -> list[GenRequest]:  # type: ignore[no-untyped-def]
    reqs = []
    for i, question in enumerate(
        ["What colour?", "What colour is the square in the middle of the clip?"]
    ):
        msgs = (
            ChatMessage("system", "Describe the clip."),
            ChatMessage("user", "<video>\n" + question, videos=(frames,)),
        )
        enc = codec.encode_messages(msgs)
        reqs.append(
            GenRequest(
                enc.ids + codec.generation_prompt(""),
                msgs,
                enc.videos,
                sampling=replace(sampling, seed=7 + i),
            )
        )
    assert len({len(r.prompt_ids) for r in reqs}) == 2  # a left-padded batch
    return reqs


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_padded_generation_is_bit_identical_and_takes_the_decode_path(
    family, temperature, tiny_model_dir, video_frames
) -> None:
    policy = load_policy(
        tiny_model_dir(family, "xs")
    )  # its own copy: the test switches attention back
    assert policy.model.config._attn_implementation == NAME
    gen = HFGenerator(policy, share_prefill=False, turn_cache_entries=0)
    reqs = _padded_requests(
        gen.codec, video_frames, SamplingParams(temperature=temperature, max_new_tokens=12)
    )
    with _count_sdpa_mask() as spy:
        fast = gen.run_batch(reqs)
    steps = max(len(o.token_ids) for o in fast)
    assert steps > 2 and all(o.finish_reason in ("stop", "length") for o in fast)
    assert spy.call_count <= 2  # the prefill's masks only; none per decode step
    policy.model.set_attn_implementation("sdpa")
    with _count_sdpa_mask() as spy:
        plain = gen.run_batch(reqs)
    assert spy.call_count >= steps  # transformers' own path builds a mask per step
    assert [o.token_ids for o in fast] == [o.token_ids for o in plain]
    assert [o.logprobs for o in fast] == [
        o.logprobs for o in plain
    ]  # bit-identical, not just close
