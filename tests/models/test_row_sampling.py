"""Per-row seeded sampling: a row's sample depends on its seed, not on its batch neighbours."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from paravt.models.base import ChatMessage, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.models.hf.generator import HFGenerator, RowSampler
from paravt.models.hf.loading import load_policy


@pytest.fixture(scope="module")
def gen(tiny_qwen3_dir: str) -> HFGenerator:
    return HFGenerator(load_policy(tiny_qwen3_dir), max_batch=256)


def _req(codec: ChatCodec, text: str, seed: int, n: int = 12) -> GenRequest:
    msgs = (ChatMessage("user", text),)
    ids = codec.encode_messages(msgs).ids + codec.generation_prompt("<think>\n")
    return GenRequest(
        ids, msgs, sampling=SamplingParams(temperature=0.7, max_new_tokens=n, seed=seed)
    )


def test_a_rows_sample_does_not_depend_on_its_batch(gen: HFGenerator) -> None:
    a = _req(gen.codec, "What colour flashes in the video?", seed=11)
    b = _req(gen.codec, "When does the digit appear?", seed=12)
    alone = gen.run_batch([a])[0]
    batched = gen.run_batch([b, a])[1]
    assert alone.token_ids == batched.token_ids
    assert alone.logprobs == pytest.approx(batched.logprobs, abs=1e-4)
    other_seed = gen.run_batch([replace(a, sampling=replace(a.sampling, seed=13))])[0]
    assert other_seed.token_ids != alone.token_ids  # the seed does matter


def test_row_sampler_draws_from_the_tempered_distribution() -> None:
    """Gumbel-max over logits / τ: 4,000 seeded rows hit softmax(logits / 0.7) (TV < 0.03);
    a suppressed (-inf) token is never drawn; clean logprobs are log softmax(logits / τ)."""
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0, float("-inf")])
    n = 4000
    sampler = RowSampler(list(range(n)), 0.7, torch.device("cpu"))
    picks = sampler(torch.zeros(n, 1, dtype=torch.long), logits.expand(n, 5).clone()).argmax(
        -1
    )  # (n,)
    freq = torch.bincount(picks, minlength=5).float() / n
    target = torch.softmax(logits / 0.7, dim=-1)  # [0.745, 0.179, 0.043, 0.010, 0]
    assert freq[4] == 0
    assert 0.5 * float((freq - target).abs().sum()) < 0.03
    clean = torch.log_softmax(sampler.clean_logprobs()[0, 0], dim=-1)
    assert torch.allclose(clean[:4], torch.log(target[:4]), atol=1e-6)
