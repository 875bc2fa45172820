"""The SFT/base trainer's batches: a seeded permutation per epoch, indexed by step (a pure function
of (seed, step), so a resumed run sees the batches it would have seen)."""

from __future__ import annotations

import random

import torch

from paravt.rl.sft import SFTTrainer


def _trainer(n: int, batch_size: int, seed: int) -> SFTTrainer:
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    examples: list = list(range(n))  # batch() only indexes the examples
    return SFTTrainer(
        examples, model, None, opt, batch_size, 1.0, total_steps=10, lr=0.1, seed=seed
    )


def _by_hand(n: int, batch_size: int, seed: int, step: int) -> list[int]:
    out = []
    for j in range(step * batch_size, (step + 1) * batch_size):
        epoch, pos = divmod(j, n)
        perm = list(range(n))
        random.Random(f"sft:{seed}:{epoch}").shuffle(perm)
        out.append(perm[pos])
    return out


def test_batches_follow_the_seeded_epoch_permutations_across_epoch_boundaries() -> None:
    t = _trainer(n=7, batch_size=3, seed=5)
    steps = list(range(12))  # 36 picks: 5 epochs, most steps straddle a boundary
    assert [t.batch(s) for s in steps] == [_by_hand(7, 3, 5, s) for s in steps]
    # each epoch is a permutation: every example once
    flat = [x for s in range(7) for x in t.batch(s)]  # 21 picks = 3 whole epochs
    assert all(sorted(flat[i * 7 : (i + 1) * 7]) == list(range(7)) for i in range(3))


def test_batches_are_a_function_of_seed_and_step_in_any_order() -> None:
    forward, backward = _trainer(10, 4, 1), _trainer(10, 4, 1)
    order = list(range(9))
    seen = {s: forward.batch(s) for s in order}
    assert {s: backward.batch(s) for s in reversed(order)} == seen  # a resume jumps back
    assert _trainer(10, 4, 2).batch(0) != seen[0]  # another seed, other batches
