"""Batched training passes (paravt.rl.batch) against the per-sequence path, on both tiny families.

Rows of different lengths, with videos of different frame counts (so different grids), without
media, and mixed, go into ONE right-padded batch; the per-sequence path forwards each alone.

Tolerance: fp32, atol 1e-5 / rtol 1e-4. The batched forward computes the same sums as the
per-sequence one but in other shapes (B×L matmuls, attention over padded keys whose weights are
exactly 0), so only the order of float additions differs: fp32 rounding (≈ 6e-8 relative per
operation) over reductions of a few hundred terms gives ≲ 1e-5 relative. A real error moves the
compared values by orders of magnitude more (one token's NLL on these random models is ≈ log V ≈ 6;
the controls below: a flipped mask token, a perturbed reference, a clipping epoch).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest
import torch
from vl_families import SIZE_FACTOR

from paravt.agent.trajectory import Trajectory, TrajectoryBuilder
from paravt.models.base import ChatMessage
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import LoadedPolicy
from paravt.models.media import model_inputs, sampling_log_softmax
from paravt.models.syncs import SyncCounter
from paravt.protocol.tags import THINK_PREFIX
from paravt.rl import batch
from paravt.rl.batch import micro_batches, plan, sampled_positions, score, vision_ids
from paravt.rl.loss import ClipKL, token_entropy
from paravt.rl.sft import sft_backward
from paravt.rl.update import TrainItem, UpdatePasses, UpdateStats, ppo_update, trajectory_logprobs
from paravt.video import Frames, sample_frames, write_video
from paravt.video.draw import solid

ATOL, RTOL = 1e-5, 1e-4
K3_IN_LOSS = ClipKL(clip_eps=0.2, kl_coef=0.1, kl_kind="k3", kl_in="loss")


@pytest.fixture(scope="module")
def video_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = Path(tmp_path_factory.mktemp("batched")) / "v.mp4"
    write_video(
        path, [solid(64, 64, (30 + 12 * i, 90, 200 - 10 * i)) for i in range(16)], fps=2.0
    )  # 8 s
    return path


def _frames(path: Path, family: str, n: int) -> Frames:
    return sample_frames(
        path, 0.0, 8.0, nframes=n, max_pixels=64 * 64, size_factor=SIZE_FACTOR[family]
    )


def _trajectory(codec: ChatCodec, frames: Frames | None, words: int, row_id: str) -> Trajectory:
    """prompt (with the video if any) | <think>\\n | sampled call | tool response | sampled
    answer."""
    content = (
        ("<video>\n" if frames is not None else "") + "What colour is the flash?" + " more" * words
    )
    msgs = (
        ChatMessage("system", "You are a helpful assistant."),
        ChatMessage("user", content, videos=(frames,) if frames is not None else ()),
    )
    b = TrajectoryBuilder(row_id, "main", 0)
    b.add_context(codec.encode_messages(msgs).ids, (frames,) if frames is not None else ())
    b.add_context(codec.generation_prompt(THINK_PREFIX))
    first = codec.encode_text("look" * (1 + words % 3) + "</think><tool_call>crop</tool_call>") + (
        codec.im_end_id,
    )
    b.add_sampled(first, [-1.0] * len(first))
    b.add_context(codec.close_turn(first))
    b.add_context(codec.encode_message(ChatMessage("tool", "[1] 00:02-00:04: a red flash")).ids)
    b.add_context(codec.generation_prompt(THINK_PREFIX))
    second = codec.encode_text("red" + " red" * words + "</think><answer>red</answer>") + (
        codec.im_end_id,
    )
    b.add_sampled(second, [-2.0] * len(second))
    b.add_context(codec.close_turn(second))
    return b.freeze("answer")


def _batch(family: str, policy: LoadedPolicy, video_path: Path, media: str) -> list[Trajectory]:
    """Four rows of different lengths; ``media``: every row has a video (4 or 8 frames), none, or
    mixed."""
    codec = ChatCodec(policy.processor)
    frames = {4: _frames(video_path, family, 4), 8: _frames(video_path, family, 8)}
    pick = {"video": [4, 8, 4, 8], "text": [None] * 4, "mixed": [8, None, 4, None]}[media]
    rows = [
        _trajectory(codec, None if n is None else frames[n], words, f"r{i}")
        for i, (n, words) in enumerate(zip(pick, (0, 7, 3, 12), strict=True))
    ]
    assert len({len(t.ids) for t in rows}) == 4  # all lengths differ: the batch is padded
    return rows


def _grads(model: torch.nn.Module) -> list[torch.Tensor]:
    return [
        p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in model.parameters()
    ]


def _assert_close(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y, atol=ATOL, rtol=RTOL)


@pytest.fixture(autouse=True)
def _padding_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows below differ in length by up to 40%: let them share one padded micro-batch (the
    default pad cap would split them), so that padding is what the equivalence tests exercise."""
    monkeypatch.setattr(batch, "MAX_PAD_SHARE", 1.0)


def test_plan_fills_micro_batches_longest_first_within_the_padded_budget() -> None:
    # lengths 5, 9, 3, 9 → order 1, 3 (9 each: 2 × 9 = 18 ≤ 18), then 0 (3 × 9 = 27 > 18: new
    # group), then 2 (2 × 5 = 10 ≤ 18, pads 2 of 10 = 0.2 ≤ 0.25)
    assert plan([5, 9, 3, 9], 18, 0.25) == [[1, 3], [0, 2]]
    assert plan([5, 9, 3, 9], 18, 0.1) == [[1, 3], [0], [2]]  # pads 0.2 > 0.1: 2 goes alone
    assert plan([5, 9, 3, 9], 4, 1.0) == [
        [1],
        [3],
        [0],
        [2],
    ]  # every row over the budget goes alone
    # no budget limit: 0 joins (pads 4 of 27 = 0.15), 2 does not (pads 10 of 36 = 0.28 > 0.25)
    assert plan([5, 9, 3, 9], 10_000, 0.25) == [[1, 3, 0], [2]]


@pytest.mark.parametrize("media", ["video", "text", "mixed"])
def test_batched_logprobs_equal_per_sequence_forwards(family_policy, video_path, media) -> None:
    """M-RoPE positions, media routing and padding: each row scores as it does alone."""
    family, policy = family_policy
    trajs = _batch(family, policy, video_path, media)
    suppress = vision_ids(policy.processor)
    (mb,) = micro_batches(policy.processor, trajs, 10_000)
    assert (
        mb.inputs["attention_mask"].shape[0] == 4
        and int(mb.inputs["attention_mask"][:, -1].sum()) == 1
    )
    with torch.no_grad():
        batched = mb.split(score(policy.model, mb, temperature=0.7, suppress_ids=suppress).logprobs)
        alone = [
            trajectory_logprobs(policy.model, policy.processor, trajs[r], 0.7) for r in mb.rows
        ]
    _assert_close(batched, alone)


@pytest.mark.parametrize("media", ["video", "text", "mixed"])
@pytest.mark.parametrize("budget", [10_000, 300])
def test_sft_batched_gives_the_per_sequence_loss_and_gradients(
    family_policy, video_path, media, budget
) -> None:
    family, policy = family_policy
    trajs = _batch(family, policy, video_path, media)
    model = copy.deepcopy(policy.model)
    n_micro = len(micro_batches(policy.processor, trajs, budget))
    assert n_micro == 1 if budget == 10_000 else n_micro > 1
    model.zero_grad(set_to_none=True)
    b = sft_backward(model, policy.processor, trajs, micro_batch_tokens=budget)
    g_batched = _grads(model)
    model.zero_grad(set_to_none=True)
    s = sft_backward(model, policy.processor, trajs, batched=False)
    assert b.n_tokens == s.n_tokens == sum(t.n_sampled for t in trajs)
    assert b.loss == pytest.approx(s.loss, rel=RTOL, abs=ATOL)
    assert any(g.abs().sum() > 0 for g in g_batched)
    _assert_close(g_batched, _grads(model))


@pytest.mark.parametrize("budget", [10_000, 300])
def test_sft_seq_mean_weighs_each_row_alike(family_policy, video_path, budget) -> None:
    """``seq-mean-token-mean``: the mean over rows of each row's token-mean NLL (by hand), the same
    loss and gradients batched or one sequence at a time, and not the token-mean on rows of
    different lengths."""
    family, policy = family_policy
    trajs = _batch(family, policy, video_path, "mixed")
    assert len({t.n_sampled for t in trajs}) > 1  # rows of different lengths: the means differ
    model = copy.deepcopy(policy.model)
    agg = "seq-mean-token-mean"
    model.zero_grad(set_to_none=True)
    b = sft_backward(model, policy.processor, trajs, micro_batch_tokens=budget, loss_agg=agg)
    g_batched = _grads(model)
    model.zero_grad(set_to_none=True)
    s = sft_backward(model, policy.processor, trajs, batched=False, loss_agg=agg)
    assert b.loss == pytest.approx(s.loss, rel=RTOL, abs=ATOL)
    _assert_close(g_batched, _grads(model))
    with torch.no_grad():
        per_row = [-float(trajectory_logprobs(model, policy.processor, t).mean()) for t in trajs]
    n = [t.n_sampled for t in trajs]
    by_rows = sum(per_row) / len(per_row)
    by_tokens = sum(m * k for m, k in zip(per_row, n, strict=True)) / sum(n)
    tol = 2e-4  # fp32 sums of a few hundred logprobs of ~8, in another order
    assert abs(by_rows - by_tokens) > 10 * tol  # these rows tell the two means apart
    assert b.loss == pytest.approx(by_rows, abs=tol)
    assert b.n_tokens == sum(n)
    token_mean = sft_backward(model, policy.processor, trajs).loss
    assert token_mean == pytest.approx(by_tokens, abs=tol)


def test_sft_loss_counts_only_model_tokens(family_policy, video_path) -> None:
    """Hand check: the NLL is −mean log p over exactly the loss-mask-1 tokens, computed from a plain
    forward of each sequence; flipping one tool-response token to mask 1 adds that token."""
    family, policy = family_policy
    trajs = _batch(family, policy, video_path, "mixed")
    suppress = vision_ids(policy.processor)

    def hand(ts: Sequence[Trajectory]) -> float:
        terms = []
        with torch.no_grad():
            for t in ts:
                inputs = model_inputs(policy.processor, t.ids, t.videos, t.images)
                logp = sampling_log_softmax(
                    policy.model(**inputs).logits[0], suppress_ids=suppress
                )  # L×V
                terms += [
                    float(logp[p - 1, t.ids[p]]) for p in range(1, len(t.ids)) if t.loss_mask[p]
                ]
        return -sum(terms) / len(terms)

    model = copy.deepcopy(policy.model)
    got = sft_backward(model, policy.processor, trajs).loss
    assert got == pytest.approx(hand(trajs), rel=RTOL, abs=ATOL)
    t = trajs[1]
    obs = (
        next(p for p in range(t.prompt_len, len(t.ids)) if t.loss_mask[p] == 0) + 3
    )  # inside the tool turn
    flipped = [
        *trajs[:1],
        dataclasses.replace(t, loss_mask=t.loss_mask[:obs] + (1,) + t.loss_mask[obs + 1 :]),
        *trajs[2:],
    ]
    got_flipped = sft_backward(model, policy.processor, flipped)
    assert got_flipped.n_tokens == sum(x.n_sampled for x in trajs) + 1
    assert got_flipped.loss == pytest.approx(hand(flipped), rel=RTOL, abs=ATOL)
    n = sum(x.n_sampled for x in trajs)
    added = (
        got_flipped.loss * (n + 1) - got * n
    )  # the added token's own NLL (≈ log V for a random model)
    assert added > 1.0  # control: the mask decides what counts


def _perturbed(model: torch.nn.Module, scale: float = 0.05) -> torch.nn.Module:
    ref = copy.deepcopy(model).eval()
    with torch.no_grad():
        torch.manual_seed(0)
        for p in ref.parameters():
            p.add_(scale * torch.randn_like(p))
    return ref


def _update(
    policy: LoadedPolicy,
    items: list[TrainItem],
    ref: torch.nn.Module,
    *,
    batched: bool,
    epochs: int,
    budget: int = 10_000,
    clip: ClipKL = K3_IN_LOSS,
    token_norm: bool = False,
) -> tuple[UpdateStats, list[torch.Tensor], list[torch.Tensor]]:
    model = copy.deepcopy(policy.model)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    stats = ppo_update(
        model,
        policy.processor,
        opt,
        items,
        clip=clip,
        passes=UpdatePasses(
            ppo_epochs=epochs, max_grad_norm=1e9, micro_batch_tokens=budget, token_norm=token_norm
        ),
        ref_model=ref,
        temperature=0.7,
        batched=batched,
    )
    return stats, _grads(model), [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("media", ["video", "text", "mixed"])
@pytest.mark.parametrize("epochs", [1, 2])
def test_grpo_update_batched_gives_the_per_sequence_loss_gradients_and_stats(
    family_policy, video_path, media, epochs
) -> None:
    """Old logprobs from the first epoch's own forward (no separate pass), reference scored on the
    same batch: loss, KL, clip fraction, gradients and the parameters after the step all match the
    per-sequence path's separate old / reference / loss passes. Two epochs: the second one's ratios
    move away from 1 (lr 0.5), so clipping and the kept old logprobs are exercised."""
    family, policy = family_policy
    trajs = _batch(family, policy, video_path, media)
    items = [TrainItem(t, a) for t, a in zip(trajs, (1.0, -0.5, 0.25, -1.5), strict=True)]
    ref = _perturbed(policy.model)
    b, gb, pb = _update(
        policy, items, ref, batched=True, epochs=epochs, budget=10_000 if epochs == 1 else 300
    )
    s, gs, ps = _update(policy, items, ref, batched=False, epochs=epochs)
    names = ("loss", "policy_loss", "kl", "clip_frac", "grad_norm", "logprob_mismatch", "ppo_kl")
    for name in names:
        assert getattr(b, name) == pytest.approx(getattr(s, name), rel=RTOL, abs=ATOL), name
    assert b.n_tokens == s.n_tokens and not b.skipped and not s.skipped
    assert b.kl > 1e-3  # the reference differs: KL is really computed
    if epochs == 2:
        assert b.clip_frac > 0  # control: the second epoch clips
        assert abs(b.ppo_kl) > 1e-4  # the second pass has moved from the old policy
    else:
        assert b.ppo_kl == 0.0  # one pass: the old policy IS the policy
    _assert_close(gb, gs)
    _assert_close(pb, ps)


def test_kl_reward_and_token_normalisation_batched_equal_per_sequence(
    family_policy, video_path
) -> None:
    """The release's defaults (KL as a k1 per-token reward, advantages normalised over every
    trained token), in two micro-batches: the batched update gives the per-sequence oracle's loss,
    KL and gradients, and, at ratio 1, loss = -(token-mean of the shaped advantages) = 0 exactly
    (token normalisation centres them), while the same update with the KL in the loss is not 0."""
    family, policy = family_policy
    trajs = _batch(family, policy, video_path, "video")
    items = [TrainItem(t, a) for t, a in zip(trajs, (1.0, -0.5, 0.25, -1.5), strict=True)]
    ref = _perturbed(policy.model)
    clip = ClipKL(clip_eps=0.2, kl_coef=0.1, kl_kind="k1", kl_in="reward")
    kw: dict = {"epochs": 1, "clip": clip, "token_norm": True}
    b, gb, _ = _update(policy, items, ref, batched=True, budget=300, **kw)
    s, gs, _ = _update(policy, items, ref, batched=False, **kw)
    for name in ("loss", "policy_loss", "kl", "grad_norm"):
        assert getattr(b, name) == pytest.approx(getattr(s, name), rel=RTOL, abs=ATOL), name
    _assert_close(gb, gs)
    assert b.loss == pytest.approx(0.0, abs=1e-5) and abs(b.kl) > 1e-3 and b.grad_norm > 0
    in_loss, _, _ = _update(
        policy, items, ref, batched=True, epochs=1, clip=dataclasses.replace(clip, kl_in="loss")
    )
    assert abs(in_loss.loss) > 1e-3  # control: -mean(A) + 0.1 * mean(k1) is not centred


def test_update_reports_the_entropy_of_the_sampling_distribution(family_policy, video_path) -> None:
    family, policy = family_policy
    trajs = _batch(family, policy, video_path, "mixed")
    suppress = vision_ids(policy.processor)
    ents = []
    with torch.no_grad():
        for t in trajs:
            inputs = model_inputs(policy.processor, t.ids, t.videos, t.images)
            logp = sampling_log_softmax(
                policy.model(**inputs).logits[0] / 0.7, suppress_ids=suppress
            )  # L×V
            ents.append(token_entropy(logp[torch.tensor(sampled_positions(t)) - 1]))  # (P,)
    stats, _, _ = _update(
        policy, [TrainItem(t, 1.0) for t in trajs], _perturbed(policy.model), batched=True, epochs=1
    )
    assert stats.entropy == pytest.approx(float(torch.cat(ents).mean()), rel=RTOL, abs=ATOL)
    assert (
        0
        < stats.entropy
        <= torch.log(torch.tensor(float(policy.model.config.text_config.vocab_size)))
    )
    assert stats.to_metrics()["actor/entropy"] == stats.entropy


def test_batched_update_forwards_policy_and_reference_once_per_micro_batch(
    family_policy, video_path
) -> None:
    """No old-logprob pass: one policy forward and one reference forward per micro-batch (the
    per-sequence path: two policy forwards and one reference forward per trajectory). With the KL
    as a per-token reward, one more (no-grad) policy forward per micro-batch: the reward's policy
    logprobs, needed before the first loss (paravt.rl.update)."""
    family, policy = family_policy
    trajs = _batch(family, policy, video_path, "video")
    items = [TrainItem(t, 1.0) for t in trajs]
    counts = {}
    for batched in (True, False, "kl reward"):
        model, ref = copy.deepcopy(policy.model), _perturbed(policy.model)
        calls = {"policy": 0, "ref": 0}
        model.model.register_forward_hook(
            lambda *_, calls=calls: calls.__setitem__("policy", calls["policy"] + 1)
        )
        ref.model.register_forward_hook(
            lambda *_, calls=calls: calls.__setitem__("ref", calls["ref"] + 1)
        )
        ppo_update(
            model,
            policy.processor,
            torch.optim.SGD(model.parameters(), lr=0.0),
            items,
            clip=ClipKL(
                clip_eps=0.2,
                kl_coef=0.1,
                kl_kind="k3",
                kl_in="reward" if batched == "kl reward" else "loss",
            ),
            passes=UpdatePasses(max_grad_norm=1.0, micro_batch_tokens=10_000),
            ref_model=ref,
            batched=bool(batched),
        )
        counts[batched] = calls
    assert counts[True] == {"policy": 1, "ref": 1}
    assert counts[False] == {"policy": 2 * len(items), "ref": len(items)}
    assert counts["kl reward"] == {"policy": 2, "ref": 1}


def _own_syncs(counter: SyncCounter) -> int:
    """Syncs made by the trainer's own code (paravt/rl), not inside the model's forward or
    backward."""
    return sum(n for site, n in counter.sites.items() if site.split()[1].startswith("rl/"))


def test_trainer_syncs_are_per_step_not_per_micro_batch(family_policy, video_path) -> None:
    """The SFT step and the GRPO update read their losses and metrics back once (not once per
    micro-batch or row): the same sync count whether four rows share one forward or take four."""
    family, policy = family_policy
    trajs = _batch(family, policy, video_path, "video")
    items = [TrainItem(t, 1.0 - 0.5 * i) for i, t in enumerate(trajs)]
    ref = _perturbed(policy.model)
    micro_batches(policy.processor, trajs, 1, model=policy.model)  # rows' positions, on the host
    own = {}
    for budget in (10_000, 1):  # one micro-batch; one per row
        assert len(micro_batches(policy.processor, trajs, budget)) == (1 if budget > 1 else 4)
        model = copy.deepcopy(policy.model)
        with SyncCounter() as sft:
            sft_backward(model, policy.processor, trajs, micro_batch_tokens=budget)
        with SyncCounter() as upd:
            ppo_update(
                model,
                policy.processor,
                torch.optim.SGD(model.parameters(), lr=0.1),
                items,
                clip=ClipKL(clip_eps=0.2, kl_coef=0.1, kl_kind="k3"),
                passes=UpdatePasses(ppo_epochs=2, max_grad_norm=1.0, micro_batch_tokens=budget),
                ref_model=ref,
            )
        own[budget] = (_own_syncs(sft), _own_syncs(upd))
    assert own[10_000] == own[1]
    assert own[1][0] <= 1  # the batch's NLL
    assert own[1][1] <= 2 + 2 * 2  # mismatch + entropy, then per epoch: the sums, the grad norm
