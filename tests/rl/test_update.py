"""ppo_update / trajectory_logprobs on the real tiny Qwen3-VL with hand-built trajectories.

Trajectories are assembled with ``TrajectoryBuilder`` exactly as an episode builds them: prompt
with a real decoded video (mask 0), forced think prefix (mask 0), sampled tokens (mask 1), a tool
response turn (mask 0) and a second sampled answer (mask 1).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import math
from pathlib import Path

import pytest
import torch

from paravt.agent.trajectory import Trajectory, TrajectoryBuilder
from paravt.models.base import ChatMessage, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.models.hf.generator import HFGenerator
from paravt.models.hf.loading import LoadedPolicy
from paravt.protocol.tags import THINK_PREFIX
from paravt.rl.batch import sampled_positions
from paravt.rl.loss import ClipKL
from paravt.rl.update import TrainItem, UpdatePasses, UpdateStats, ppo_update, trajectory_logprobs
from paravt.video import Frames, sample_frames, write_video
from paravt.video.draw import solid


@pytest.fixture(scope="module")
def frames(tmp_path_factory: pytest.TempPathFactory) -> Frames:
    path = Path(tmp_path_factory.mktemp("upd")) / "v.mp4"
    write_video(
        path, [solid(64, 64, (30 + 12 * i, 90, 200 - 10 * i)) for i in range(16)], fps=2.0
    )  # 8 s
    return sample_frames(path, 0.0, 8.0, nframes=4, max_pixels=64 * 64)


@pytest.fixture(scope="module")
def codec(policy: LoadedPolicy) -> ChatCodec:
    return ChatCodec(policy.processor)


def _prompt(codec: ChatCodec, frames: Frames) -> tuple[tuple[ChatMessage, ...], tuple[int, ...]]:
    msgs = (
        ChatMessage("system", "You are a helpful assistant."),
        ChatMessage("user", "<video>\nWhat colour is the flash?", videos=(frames,)),
    )
    return msgs, codec.encode_messages(msgs).ids


def _two_turn(codec: ChatCodec, frames: Frames) -> Trajectory:
    """prompt | <think>\\n | sampled call | tool response | <think>\\n | sampled answer."""
    msgs, ids = _prompt(codec, frames)
    b = TrajectoryBuilder("ep", "main", 0)
    b.add_context(ids, (frames,))
    b.add_context(codec.generation_prompt(THINK_PREFIX))
    first = codec.encode_text("look</think><tool_call>crop</tool_call>") + (codec.im_end_id,)
    b.add_sampled(first, [-1.0] * len(first))
    b.add_context(codec.close_turn(first))
    b.add_context(codec.encode_message(ChatMessage("tool", "[1] 00:02-00:04: a red flash")).ids)
    b.add_context(codec.generation_prompt(THINK_PREFIX))
    second = codec.encode_text("red</think><answer>red</answer>") + (codec.im_end_id,)
    b.add_sampled(second, [-2.0] * len(second))
    b.add_context(codec.close_turn(second))
    return b.freeze("answer")


def _observation_position(traj: Trajectory) -> int:
    """A mask-0 token inside the tool response (after the first sampled span)."""
    first_sampled = traj.prompt_len
    after = next(t for t in range(first_sampled, len(traj.ids)) if traj.loss_mask[t] == 0)
    return after + 3


def _grads_after(model, processor, items, **kw) -> tuple[UpdateStats, list[torch.Tensor]]:
    """Run ppo_update with a zero-lr SGD (parameters stay put) and return the gradients it left."""
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    stats = ppo_update(
        model,
        processor,
        opt,
        items,
        clip=ClipKL(clip_eps=0.2, kl_coef=0.0, kl_kind="k3"),
        passes=UpdatePasses(max_grad_norm=1e9),
        **kw,
    )
    return stats, [
        p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in model.parameters()
    ]


def _params(model) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def test_logprob_value_at_an_observation_token_changes_neither_loss_nor_gradient(
    policy, codec, frames
) -> None:
    traj = _two_turn(codec, frames)
    t = _observation_position(traj)
    assert traj.loss_mask[t] == 0
    other = dataclasses.replace(traj, logprobs=traj.logprobs[:t] + (-7.5,) + traj.logprobs[t + 1 :])
    model = copy.deepcopy(policy.model)
    s1, g1 = _grads_after(model, policy.processor, [TrainItem(traj, 1.0)])
    s2, g2 = _grads_after(model, policy.processor, [TrainItem(other, 1.0)])
    assert s1.loss == s2.loss and s1.logprob_mismatch == s2.logprob_mismatch
    assert s1.n_tokens == s2.n_tokens == traj.n_sampled
    assert any(g.abs().sum() > 0 for g in g1)
    assert all(torch.equal(a, b) for a, b in zip(g1, g2))


def test_loss_mask_on_an_observation_token_does_change_the_gradient(policy, codec, frames) -> None:
    """Control for the test above: the mask (not the logprob value) decides what is trained."""
    traj = _two_turn(codec, frames)
    t = _observation_position(traj)
    flipped = dataclasses.replace(
        traj, loss_mask=traj.loss_mask[:t] + (1,) + traj.loss_mask[t + 1 :]
    )
    model = copy.deepcopy(policy.model)
    s1, g1 = _grads_after(model, policy.processor, [TrainItem(traj, 1.0)])
    s2, g2 = _grads_after(model, policy.processor, [TrainItem(flipped, 1.0)])
    assert s2.n_tokens == s1.n_tokens + 1
    assert not all(torch.equal(a, b) for a, b in zip(g1, g2))


def test_sampled_logprob_values_feed_the_mismatch_metric(policy, codec, frames) -> None:
    traj = _two_turn(codec, frames)
    with torch.no_grad():
        recomputed = trajectory_logprobs(policy.model, policy.processor, traj)  # (P,)
    pos = sampled_positions(traj)
    exact = list(traj.logprobs)
    for p, v in zip(pos, recomputed.tolist()):
        exact[p] = v
    exact_traj = dataclasses.replace(traj, logprobs=tuple(exact))
    model = copy.deepcopy(policy.model)
    s_exact, _ = _grads_after(model, policy.processor, [TrainItem(exact_traj, 1.0)])
    s_hand, _ = _grads_after(model, policy.processor, [TrainItem(traj, 1.0)])
    hand = torch.tensor([traj.logprobs[p] for p in pos])  # -1.0 / -2.0 as written by _two_turn
    assert s_exact.logprob_mismatch < 1e-6
    assert s_hand.logprob_mismatch == pytest.approx(
        float((recomputed - hand).abs().mean()), abs=1e-5
    )


def test_positive_advantage_raises_and_negative_lowers_the_sampled_logprobs(
    policy, codec, frames
) -> None:
    traj = _two_turn(codec, frames)
    with torch.no_grad():
        before = float(trajectory_logprobs(policy.model, policy.processor, traj).sum())
    moved = {}
    for adv in (1.0, -1.0):
        model = copy.deepcopy(policy.model)
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        stats = ppo_update(
            model,
            policy.processor,
            opt,
            [TrainItem(traj, adv)],
            clip=ClipKL(clip_eps=0.2, kl_coef=0.0, kl_kind="k3"),
            passes=UpdatePasses(max_grad_norm=1.0),
        )
        assert not stats.skipped
        with torch.no_grad():
            moved[adv] = float(trajectory_logprobs(model, policy.processor, traj).sum())
    assert moved[1.0] > before > moved[-1.0]


def test_recomputed_logprobs_at_tau_equal_the_generators_sampling_logprobs(
    policy, codec, frames
) -> None:
    """The trainer must score sampled tokens under the distribution the generator sampled from
    (logits / τ over the vocabulary the generator allows)."""
    msgs, ids = _prompt(codec, frames)
    prompt = ids + codec.generation_prompt(THINK_PREFIX)
    gen = HFGenerator(policy)
    req = GenRequest(
        prompt,
        msgs,
        (frames,),
        (),
        SamplingParams(temperature=0.7, max_new_tokens=24, seed=5),
        response_prefix=THINK_PREFIX,
    )
    out = asyncio.run(gen.generate([req]))[0]
    assert len(out.token_ids) > 5
    b = TrajectoryBuilder("ep", "main", 0)
    b.add_context(prompt, (frames,))
    b.add_sampled(out.token_ids, out.logprobs)
    b.add_context(codec.close_turn(out.token_ids))
    traj = b.freeze("answer")
    with torch.no_grad():
        recomputed = trajectory_logprobs(
            policy.model, policy.processor, traj, temperature=0.7
        )  # (P,)
    diff = (recomputed - torch.tensor(out.logprobs)).abs().max()
    assert float(diff) < 1e-4, f"max |recomputed - sampled| = {float(diff):.2e}"


def test_nan_advantage_skips_the_step_and_leaves_parameters_unchanged(
    policy, codec, frames
) -> None:
    traj = _two_turn(codec, frames)
    model = copy.deepcopy(policy.model)
    before = _params(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    stats = ppo_update(
        model,
        policy.processor,
        opt,
        [TrainItem(traj, 1.0), TrainItem(traj, math.nan)],
        clip=ClipKL(clip_eps=0.2, kl_coef=0.0, kl_kind="k3"),
        passes=UpdatePasses(max_grad_norm=1.0),
    )
    assert stats.skipped and stats.to_metrics()["update_skipped"] == 1.0
    assert all(torch.equal(a, b) for a, b in zip(before, _params(model)))
    assert len(opt.state) == 0  # Adam never stepped: no moment buffers were created


def test_zero_advantage_without_kl_leaves_parameters_unchanged(policy, codec, frames) -> None:
    traj = _two_turn(codec, frames)
    model = copy.deepcopy(policy.model)
    before = _params(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    stats = ppo_update(
        model,
        policy.processor,
        opt,
        [TrainItem(traj, 0.0), TrainItem(traj, 0.0)],
        clip=ClipKL(clip_eps=0.2, kl_coef=0.0, kl_kind="k3"),
        passes=UpdatePasses(max_grad_norm=1.0),
    )
    assert not stats.skipped and stats.grad_norm == 0.0 and stats.loss == 0.0
    assert len(opt.state) > 0  # Adam did step, with zero gradients
    assert all(torch.equal(a, b) for a, b in zip(before, _params(model)))


def test_zero_advantage_still_moves_parameters_through_kl_to_a_different_reference(
    policy, codec, frames
) -> None:
    traj = _two_turn(codec, frames)
    model = copy.deepcopy(policy.model)
    ref = copy.deepcopy(policy.model).eval()
    with torch.no_grad():
        torch.manual_seed(0)
        for p in ref.parameters():
            p.add_(0.05 * torch.randn_like(p))
    before = _params(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    stats = ppo_update(
        model,
        policy.processor,
        opt,
        [TrainItem(traj, 0.0)],
        clip=ClipKL(clip_eps=0.2, kl_coef=0.1, kl_kind="k3"),
        passes=UpdatePasses(max_grad_norm=1.0),
        ref_model=ref,
    )
    assert stats.kl > 0 and stats.grad_norm > 0
    assert not all(torch.equal(a, b) for a, b in zip(before, _params(model)))


#: the release's KL (a k1 per-token reward, coefficient 0.01) and advantage normalisation over
#: every trained token: the defaults of `rl`
KL_REWARD = ClipKL(clip_eps=0.2, kl_coef=0.01, kl_kind="k1", kl_in="reward")


@pytest.mark.parametrize("batched", [True, False])
def test_the_update_never_reads_the_last_bits_of_the_sampling_logprobs(
    policy, codec, frames, batched
) -> None:
    """Issue 48 item 8: the generator's logprobs of the same tokens differ in their last bits with
    the rows that shared its forwards (its batch layout: timing). A group whose rewards tie (every
    advantage 0, as in each step of the micro preset) used to be trained on the KL reward of those
    bits, scaled up by the token normalisation: the same rollouts gave grad_norm 0.0260 or 0.0235.
    Now the KL reward reads the policy's own recompute: sampling logprobs one ulp apart give the
    same update, bit for bit, and at the first step (the policy IS its reference) nothing at all."""
    traj = _two_turn(codec, frames)
    with torch.no_grad():
        recomputed = trajectory_logprobs(policy.model, policy.processor, traj, 0.7)  # (P,)
    pos = sampled_positions(traj)
    runs = []
    for nudge in (False, True):  # the same tokens sampled in two batch layouts
        lp = list(traj.logprobs)
        for p, v in zip(pos, recomputed, strict=True):
            lp[p] = float(torch.nextafter(v, v - 1.0) if nudge else v)
        items = [TrainItem(dataclasses.replace(traj, logprobs=tuple(lp)), 0.0) for _ in range(2)]
        model = copy.deepcopy(policy.model)
        stats = ppo_update(
            model,
            policy.processor,
            torch.optim.SGD(model.parameters(), lr=0.0),
            items,
            clip=KL_REWARD,
            passes=UpdatePasses(max_grad_norm=1.0, token_norm=True),
            ref_model=copy.deepcopy(policy.model).eval(),
            temperature=0.7,
            batched=batched,
        )
        grads = [torch.zeros_like(p) if p.grad is None else p.grad for p in model.parameters()]
        runs.append((stats, grads))
    (a, ga), (b, gb) = runs
    assert a.logprob_mismatch != b.logprob_mismatch  # control: the sampling logprobs did differ
    assert dataclasses.replace(a, logprob_mismatch=0.0, old_logprob_s=0.0) == dataclasses.replace(
        b, logprob_mismatch=0.0, old_logprob_s=0.0
    )
    assert all(torch.equal(x, y) for x, y in zip(ga, gb, strict=True))
    assert a.grad_norm == 0.0 and a.loss == 0.0 and a.kl == 0.0 and not a.skipped
    assert all(not g.any() for g in ga)
