import math

import pytest
import torch

from paravt.errors import ConfigError, DataError
from paravt.rl.loss import ClipKL, grpo_loss, kl_penalty, policy_loss, token_mean

E05, EM05 = math.exp(0.5), math.exp(-0.5)  # 1.6487213, 0.6065307


def _four_cases() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    # one row, four tokens: ratio e^0.5, e^0.5, e^-0.5, e^-0.5 with A = +1, −1, +1, −1
    logp = torch.tensor([[0.5, 0.5, -0.5, -0.5]], dtype=torch.float64, requires_grad=True)
    old = torch.zeros(1, 4, dtype=torch.float64)
    adv = torch.tensor([[1.0, -1.0, 1.0, -1.0]], dtype=torch.float64)
    return logp, old, adv, torch.ones(1, 4)


def test_policy_loss_clips_each_sign_of_advantage_on_its_own_side() -> None:
    logp, old, adv, mask = _four_cases()
    out = policy_loss(logp, old, adv, mask, clip_eps=0.2)
    # token 0: ratio 1.6487 > 1.2, A>0 ⇒ max(−1.6487, −1.2) = −1.2          (clipped)
    # token 1: ratio 1.6487, A<0 ⇒ max(1.6487, 1.2) = 1.6487                 (unclipped)
    # token 2: ratio 0.6065, A>0 ⇒ max(−0.6065, −0.8) = −0.6065              (unclipped)
    # token 3: ratio 0.6065 < 0.8, A<0 ⇒ max(0.6065, 0.8) = 0.8              (clipped)
    # token-mean: (−1.2 + 1.6487213 − 0.6065307 + 0.8) / 4 = 0.6421906 / 4 = 0.16054765
    assert out.loss.item() == pytest.approx((-1.2 + E05 - EM05 + 0.8) / 4, abs=1e-12)
    assert out.loss.item() == pytest.approx(0.16054765, abs=1e-8)
    assert out.clip_frac == pytest.approx(0.5, abs=1e-12)  # tokens 0 and 3
    assert out.approx_kl == pytest.approx(0.0, abs=1e-12)  # mean(−0.5, −0.5, 0.5, 0.5)
    assert out.ratio_mean == pytest.approx((2 * E05 + 2 * EM05) / 4, abs=1e-12)  # 1.1276260
    assert out.n_tokens == 4
    out.loss.backward()
    # d/dlogp of −A·exp(logp)/4: token 1 → +e^0.5/4 = 0.41218; token 2 → −e^−0.5/4 = −0.15163;
    # clipped tokens 0 and 3 have zero gradient
    assert logp.grad[0].tolist() == pytest.approx([0.0, E05 / 4, -EM05 / 4, 0.0], abs=1e-12)


def test_clip_eps_high_moves_only_the_upper_bound() -> None:
    logp, old, adv, mask = _four_cases()
    out = policy_loss(logp, old, adv, mask, clip_eps=0.2, clip_eps_high=0.28)
    # token 0 now clipped at 1.28 ⇒ −1.28; token 3 still clipped at 0.8
    assert out.loss.item() == pytest.approx((-1.28 + E05 - EM05 + 0.8) / 4, abs=1e-12)


def test_ratio_one_gives_minus_advantage_and_per_sequence_advantages_broadcast() -> None:
    logp = torch.full((2, 3), -1.0)
    adv = torch.tensor([2.0, -1.0])  # (B,) per sequence
    out = policy_loss(logp, logp.clone(), adv, torch.ones(2, 3), clip_eps=0.2)
    # ρ = 1 ⇒ per-token loss −A: row 0 → −2 ×3, row 1 → +1 ×3; mean = (−6 + 3)/6 = −0.5
    assert out.loss.item() == pytest.approx(-0.5, abs=1e-7)
    assert out.clip_frac == 0.0 and out.ratio_mean == pytest.approx(1.0, abs=1e-7)


def test_token_mean_weights_tokens_not_sequences_over_ragged_masks() -> None:
    # row 0: 1 loss token with A = −3; row 1: 3 loss tokens with A = −1 (ratio 1 ⇒ loss −A)
    # token-mean = (3 + 1 + 1 + 1) / 4 = 1.5   (seq-mean would be (3 + 1) / 2 = 2.0)
    logp = torch.zeros(2, 4)
    adv = torch.tensor([[-3.0] * 4, [-1.0] * 4])
    mask = torch.tensor([[0, 1, 0, 0], [0, 1, 1, 1]])
    assert policy_loss(logp, logp, adv, mask, clip_eps=0.2).loss.item() == pytest.approx(1.5)


def test_masked_positions_change_neither_loss_nor_gradient() -> None:
    # observation tokens (mask 0) at positions 1 and 2 of row 0, padding at row 1 end
    mask = torch.tensor([[1, 0, 0, 1], [1, 1, 1, 0]])
    adv = torch.tensor([[0.7] * 4, [-1.3] * 4])
    old = torch.tensor([[-1.0, -2.0, -3.0, -0.5], [-0.2, -0.9, -1.1, 0.0]])
    base = torch.tensor([[-0.9, -2.0, -3.0, -0.6], [-0.25, -1.0, -1.0, 0.0]])
    garbage = base.clone()
    garbage[0, 1], garbage[0, 2], garbage[1, 3] = 40.0, -1e9, float("nan")

    def run(values: torch.Tensor) -> tuple[float, torch.Tensor]:
        logp = values.clone().requires_grad_(True)
        out = grpo_loss(
            logp, old, adv, mask, clip=ClipKL(clip_eps=0.2, kl_coef=0.5), ref_logprobs=old - 0.1
        )
        out.loss.backward()
        return out.loss.item(), logp.grad

    loss_a, grad_a = run(base)
    loss_b, grad_b = run(garbage)
    assert loss_b == loss_a
    assert torch.equal(grad_a, grad_b)
    assert torch.equal(grad_b[mask == 0], torch.zeros(3))
    assert grad_b[mask == 1].abs().min() > 0  # the trainable tokens do get a gradient


def test_k1_and_k3_on_hand_picked_tokens() -> None:
    logp = torch.tensor([[-1.0, -2.0, -0.3]])
    ref = torch.tensor([[-1.5, -1.0, -0.3]])
    # k1 = logp − ref = [0.5, −1.0, 0.0]
    assert kl_penalty(logp, ref, "k1")[0].tolist() == pytest.approx([0.5, -1.0, 0.0], abs=1e-7)
    # k3 with d = ref − logp = [−0.5, 1.0, 0]: e^d − d − 1 =
    # [0.6065307 + 0.5 − 1, 2.7182818 − 2, 0] = [0.1065307, 0.7182818, 0.0]
    k3 = kl_penalty(logp, ref, "k3")
    assert k3[0].tolist() == pytest.approx([0.10653066, 0.71828183, 0.0], abs=1e-7)


def test_k3_is_non_negative_and_capped() -> None:
    g = torch.Generator().manual_seed(0)
    logp = -torch.rand(64, 32, generator=g) * 6
    ref = -torch.rand(64, 32, generator=g) * 6
    assert kl_penalty(logp, ref, "k3").min() >= 0.0
    assert kl_penalty(logp, ref, "k1").min() < 0.0  # k1 alone can be negative
    # d = 15 ⇒ e^15 − 16 ≈ 3.3e6, capped at 10
    assert kl_penalty(torch.tensor([[-15.0]]), torch.tensor([[0.0]]), "k3").item() == 10.0


def test_grpo_loss_adds_kl_coef_times_token_mean_kl() -> None:
    logp, old, adv, mask = _four_cases()
    ref = torch.zeros(1, 4, dtype=torch.float64)
    out = grpo_loss(logp, old, adv, mask, clip=ClipKL(clip_eps=0.2, kl_coef=0.01), ref_logprobs=ref)
    # k3 with d = −logp = [−0.5, −0.5, 0.5, 0.5]:
    # e^−0.5 + 0.5 − 1 = 0.1065307 (×2), e^0.5 − 0.5 − 1 = 0.1487213 (×2); mean 0.1276260
    kl = (2 * (EM05 - 0.5) + 2 * (E05 - 1.5)) / 4
    assert out.kl == pytest.approx(kl, abs=1e-12)
    assert out.policy_loss == pytest.approx(0.16054765, abs=1e-8)
    assert out.loss.item() == pytest.approx(0.16054765 + 0.01 * 0.12762597, abs=1e-8)


def test_batch_of_8_equals_two_micro_batches_of_4_with_global_tokens() -> None:
    g = torch.Generator().manual_seed(3)
    logp0 = (-torch.rand(8, 6, generator=g) * 3).double()
    old = logp0 + 0.3 * torch.randn(8, 6, generator=g).double()
    ref = logp0 + 0.2 * torch.randn(8, 6, generator=g).double()
    adv = torch.randn(8, generator=g).double()
    lengths = torch.tensor([1, 6, 3, 2, 5, 6, 4, 2])  # ragged: 29 tokens in total
    mask = (torch.arange(6)[None, :] < lengths[:, None]).long()
    kw = dict(clip=ClipKL(clip_eps=0.2, kl_coef=0.01))

    full_lp = logp0.clone().requires_grad_(True)
    full = grpo_loss(full_lp, old, adv, mask, ref_logprobs=ref, **kw)
    full.loss.backward()

    acc_lp = logp0.clone().requires_grad_(True)
    parts = []
    for rows in (slice(0, 4), slice(4, 8)):
        out = grpo_loss(
            acc_lp[rows],
            old[rows],
            adv[rows],
            mask[rows],
            ref_logprobs=ref[rows],
            global_tokens=29,
            **kw,
        )
        out.loss.backward()
        parts.append(out)
    assert sum(p.loss.item() for p in parts) == pytest.approx(full.loss.item(), abs=1e-12)
    assert torch.allclose(acc_lp.grad, full_lp.grad, rtol=0, atol=1e-12)
    for name in ("clip_frac", "approx_kl", "ratio_mean", "kl"):  # metrics sum too
        assert sum(getattr(p, name) for p in parts) == pytest.approx(getattr(full, name), abs=1e-12)
    # without global_tokens each half is its own mean (12 and 17 tokens): the sum is NOT the mean
    naive = sum(
        grpo_loss(logp0[r], old[r], adv[r], mask[r], ref_logprobs=ref[r], **kw).loss.item()
        for r in (slice(0, 4), slice(4, 8))
    )
    assert abs(naive - full.loss.item()) > 1e-3


def test_empty_mask_gives_zero_loss_that_still_backpropagates() -> None:
    logp = torch.zeros(2, 3, requires_grad=True)
    out = policy_loss(logp, logp.detach(), torch.ones(2), torch.zeros(2, 3), clip_eps=0.2)
    out.loss.backward()
    assert out.loss.item() == 0.0 and out.n_tokens == 0
    assert torch.equal(logp.grad, torch.zeros(2, 3))


def test_bad_arguments_raise_typed_errors() -> None:
    x = torch.zeros(2, 3)
    with pytest.raises(ConfigError, match="clip_eps"):
        policy_loss(x, x, x, x, clip_eps=0.0)
    with pytest.raises(DataError, match="same shape"):
        policy_loss(x, torch.zeros(2, 4), x, x, clip_eps=0.2)
    with pytest.raises(ConfigError, match="ref_logprobs"):
        grpo_loss(x, x, x, x, clip=ClipKL(clip_eps=0.2, kl_coef=0.01))
    with pytest.raises(ConfigError, match="k1"):
        kl_penalty(x, x, "k2")  # type: ignore[arg-type]
    with pytest.raises(DataError, match="global_tokens"):
        token_mean(x, torch.ones(2, 3), global_tokens=5)
