import math
from dataclasses import dataclass

import pytest
import torch

from paravt.errors import DataError
from paravt.rl.batching import gather_logprobs, pad_batch, shift_targets, split_micro_batches
from paravt.rl.loss import grpo_loss


@dataclass(frozen=True)
class Rec:  # the three fields of paravt.agent.Trajectory that batching reads
    ids: tuple[int, ...]
    loss_mask: tuple[int, ...]
    logprobs: tuple[float, ...]


class CausalToy(torch.nn.Module):
    """logits[t] = W · mean(emb(ids[:t+1])): causal, context-dependent, float64."""

    def __init__(self, vocab: int = 11, hidden: int = 8) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.emb = torch.nn.Parameter(torch.randn(vocab, hidden, generator=g, dtype=torch.float64))
        self.out = torch.nn.Parameter(torch.randn(hidden, vocab, generator=g, dtype=torch.float64))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # (B, T) → (B, T, V)
        h = self.emb[ids].cumsum(1)  # (B, T, H)
        h = h / torch.arange(1, ids.shape[1] + 1, dtype=h.dtype)[None, :, None]  # (B, T, H)
        return h @ self.out  # (B, T, V)


def test_pad_batch_right_pads_and_keeps_values_aligned_with_ids() -> None:
    a = Rec((5, 6, 7), (0, 1, 1), (0.0, -0.5, -1.5))
    b = Rec((5, 8, 9, 3, 4), (0, 1, 0, 0, 1), (0.0, -0.25, 9.0, 9.0, -2.0))  # 9.0 is not sampled
    batch = pad_batch([a, b], [1.5, -0.5], pad_id=0)
    assert batch.input_ids.tolist() == [[5, 6, 7, 0, 0], [5, 8, 9, 3, 4]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]
    assert batch.loss_mask.tolist() == [[0, 1, 1, 0, 0], [0, 1, 0, 0, 1]]
    # logprobs at masked positions are zeroed (the 9.0s), never carried into the loss
    assert batch.old_logprobs.tolist() == [[0, -0.5, -1.5, 0, 0], [0, -0.25, 0, 0, -2.0]]
    # sequence advantage broadcast on loss tokens only
    assert batch.advantages.tolist() == [[0, 1.5, 1.5, 0, 0], [0, -0.5, 0, 0, -0.5]]
    assert batch.lengths == (3, 5) and batch.n_loss_tokens == 4


def test_shift_targets_line_up_with_the_token_each_logit_predicts() -> None:
    batch = pad_batch([Rec((5, 6, 7), (0, 1, 1), (0.0, -0.5, -1.5))], [2.0], pad_id=0)
    t = shift_targets(batch)
    # column j ↔ input_ids[:, j+1]: columns are tokens 6 and 7
    assert t.loss_mask.tolist() == [[1, 1]]
    assert t.old_logprobs.tolist() == [[-0.5, -1.5]]
    assert t.advantages.tolist() == [[2.0, 2.0]]


def test_gather_logprobs_reads_logits_j_at_token_j_plus_1() -> None:
    # logits are log-probabilities, so log_softmax returns them unchanged:
    # position 0 predicts ids[1] = 2 with p = 0.5; position 1 predicts ids[2] = 0 with p = 0.1
    probs = torch.tensor([[[0.2, 0.3, 0.5], [0.1, 0.6, 0.3], [0.3, 0.3, 0.4]]])
    out = gather_logprobs(probs.log(), torch.tensor([[1, 2, 0]]))
    assert out.shape == (1, 2)
    assert out[0].tolist() == pytest.approx([math.log(0.5), math.log(0.1)], abs=1e-6)


def test_gather_logprobs_divides_logits_by_the_sampling_temperature() -> None:
    # logits [0, ln 3] at τ = 0.5 → [0, 2 ln 3] = log-weights [1, 9] ⇒ p(token 1) = 0.9
    logits = torch.tensor([[[0.0, math.log(3.0)], [0.0, 0.0]]])
    out = gather_logprobs(logits, torch.tensor([[0, 1]]), temperature=0.5)
    assert out.item() == pytest.approx(math.log(0.9), abs=1e-6)


def _records(model: CausalToy) -> tuple[list[Rec], list[float]]:
    """8 ragged trajectories; sampling logprobs computed prefix by prefix (no batching code)."""
    g = torch.Generator().manual_seed(1)
    recs, advs = [], []
    for i, n in enumerate([4, 9, 6, 3, 7, 9, 5, 2]):
        ids = torch.randint(1, 11, (n,), generator=g)
        mask = [0] + [int(x) for x in torch.randint(0, 2, (n - 1,), generator=g)]
        mask[-1] = 1  # every row has at least one trainable token
        lps = [0.0]
        with torch.no_grad():
            for t in range(1, n):
                logits = model(ids[None, :t])[0, -1] / 0.7  # predicts ids[t] from ids[:t]
                lps.append(float(torch.log_softmax(logits, -1)[ids[t]]) if mask[t] else 0.0)
        recs.append(Rec(tuple(ids.tolist()), tuple(mask), tuple(lps)))
        advs.append((-1.0) ** i * (0.25 + 0.1 * i))
    return recs, advs


def test_recomputed_logprobs_match_sampling_logprobs_so_the_ratio_is_one() -> None:
    model = CausalToy()
    recs, advs = _records(model)
    batch = pad_batch(recs, advs, pad_id=0, dtype=torch.float64)
    t = shift_targets(batch)
    logp = gather_logprobs(model(batch.input_ids), batch.input_ids, temperature=0.7)  # (B, T-1)
    out = grpo_loss(logp, t.old_logprobs, t.advantages, t.loss_mask, clip_eps=0.2)
    # an off-by-one alignment would compare logprobs of different tokens: ratio far from 1
    assert out.ratio_mean == pytest.approx(1.0, abs=1e-12)
    assert out.approx_kl == pytest.approx(0.0, abs=1e-12) and out.clip_frac == 0.0
    assert out.n_tokens == batch.n_loss_tokens


def test_one_batch_of_8_equals_2x4_micro_batch_accumulation_through_a_model() -> None:
    model = CausalToy()
    recs, advs = _records(model)
    with torch.no_grad():  # make the current policy differ from the sampling one
        model.out.add_(0.3)
    batch = pad_batch(recs, advs, pad_id=0, dtype=torch.float64)

    def step(mb_size: int) -> tuple[float, torch.Tensor, torch.Tensor]:
        model.zero_grad()
        total = 0.0
        for mb in split_micro_batches(batch, mb_size):
            t = shift_targets(mb.batch)
            logp = gather_logprobs(model(mb.batch.input_ids), mb.batch.input_ids, temperature=0.7)
            out = grpo_loss(logp, t.old_logprobs, t.advantages, t.loss_mask, clip_eps=0.2,
                            ref_logprobs=t.old_logprobs, kl_coef=0.01,
                            global_tokens=mb.global_tokens)
            out.loss.backward()
            total += out.loss.item()
        return total, model.emb.grad.clone(), model.out.grad.clone()

    loss8, emb8, out8 = step(8)
    loss4, emb4, out4 = step(4)
    assert loss4 == pytest.approx(loss8, abs=1e-12)
    assert torch.allclose(emb4, emb8, rtol=0, atol=1e-12)
    assert torch.allclose(out4, out8, rtol=0, atol=1e-12)
    assert emb8.abs().sum() > 0


def test_micro_batches_are_row_slices_trimmed_to_their_longest_row() -> None:
    lengths = (2, 3, 6, 4, 2)
    recs = [Rec((1,) * n, (0,) + (1,) * (n - 1), (0.0,) + (-1.0,) * (n - 1)) for n in lengths]
    batch = pad_batch(recs, [1.0] * 5, pad_id=0)
    mbs = split_micro_batches(batch, 2)
    assert [mb.rows for mb in mbs] == [(0, 1), (2, 3), (4,)]
    assert [tuple(mb.batch.input_ids.shape) for mb in mbs] == [(2, 3), (2, 6), (1, 2)]
    # global token count = (2−1) + (3−1) + (6−1) + (4−1) + (2−1) = 12 on every micro-batch
    assert {mb.global_tokens for mb in mbs} == {12}
    assert split_micro_batches(batch, 2, trim=False)[0].batch.input_ids.shape == (2, 6)


@pytest.mark.parametrize(
    ("rec", "match"),
    [
        (Rec((1, 2), (1, 1), (-1.0, -1.0)), "first token"),
        (Rec((1, 2, 3), (0, 1), (0.0, -1.0)), "lengths"),
        (Rec((1, 2), (0, 2), (0.0, -1.0)), "only 0 and 1"),
        (Rec((1, 2), (0, 1), (0.0, float("-inf"))), "non-finite"),
    ],
)
def test_malformed_records_raise_data_error(rec: Rec, match: str) -> None:
    with pytest.raises(DataError, match=match):
        pad_batch([rec], [1.0], pad_id=0)


def test_advantage_count_must_match_sequences() -> None:
    with pytest.raises(DataError, match="one each"):
        pad_batch([Rec((1, 2), (0, 1), (0.0, -1.0))], [1.0, 2.0], pad_id=0)
