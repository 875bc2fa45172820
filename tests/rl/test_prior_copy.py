"""The base's language stage (`prior.copy_steps`): copy runs first, then the stages after it as
they are without it (batches and learning-rate schedule); the induction probe that checks it."""

from __future__ import annotations

import random

import pytest
import torch
from pydantic import ValidationError

from paravt.config import PriorConfig, TrainConfig
from paravt.data.synth.copy_runs import GAP, RUN, copy_pool, copy_row, induction
from paravt.models.hf.loading import load_policy
from paravt.repro.base_probe import base_checks
from paravt.rl.prior import PriorTrainer, copy_batch
from paravt.rl.session import PolicySession

POOL = list(range(20, 60))


def test_a_copy_row_repeats_its_run_after_the_gap_and_trains_the_predictable_repeat() -> None:
    rng = random.Random(3)
    for _ in range(50):
        ids, mask = copy_row(rng, POOL)
        n = sum(mask) + 1  # the repeat's first token follows a random one: not trained
        gap = len(ids) - 2 * n
        assert RUN[0] <= n <= RUN[1] and GAP[0] <= gap <= GAP[1]
        assert ids[:n] == ids[-n:] and set(ids) <= set(POOL)
        assert mask == [0] * (n + gap + 1) + [1] * (n - 1)
    ids, mask = copy_row(rng, POOL, run=20, gap=100)
    assert len(ids) == 140 and sum(mask) == 19


def test_copy_batches_are_a_function_of_seed_and_step() -> None:
    a, b = copy_batch(1, 5, 4, POOL), copy_batch(1, 5, 4, POOL)
    assert [t.ids for t in a] == [t.ids for t in b] and len(a) == 4
    assert [t.ids for t in a] != [t.ids for t in copy_batch(1, 6, 4, POOL)]
    assert [t.ids for t in a] != [t.ids for t in copy_batch(2, 5, 4, POOL)]
    rng = random.Random("copy:1:5")  # the rows copy_row draws from the step's own stream
    assert [(list(t.ids), list(t.loss_mask)) for t in a] == [copy_row(rng, POOL) for _ in range(4)]
    assert all(not t.videos and not t.images for t in a)


def test_the_pool_is_the_corpus_words_without_special_or_protocol_tokens(
    tiny_qwen3_dir: str,
) -> None:
    tok = load_policy(tiny_qwen3_dir).processor.tokenizer
    pool = copy_pool(tok)
    added = set(tok.get_added_vocab().values())
    assert added and not added & set(pool) and not set(tok.all_special_ids) & set(pool)
    assert 100 < len(pool) < len(tok) and pool == sorted(pool)
    frequent = copy_pool(tok, min_count=50)
    assert set(frequent) < set(pool) and set(pool) < set(copy_pool(tok, min_count=1))
    report = tok("A full-frame red flash appears at 66.8 s.", add_special_tokens=False)
    assert set(report["input_ids"]) <= set(pool)  # a tool response's report is in it


class _Copier(torch.nn.Module):
    """Predicts, after each token, what followed its last earlier occurrence (an induction head
    written out): the probe's right answer; ``wrong`` shifts every guess by one id."""

    def __init__(self, vocab: int, wrong: bool = False) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.vocab, self.wrong = vocab, wrong

    def forward(self, input_ids: torch.Tensor) -> object:
        ids = input_ids[0].tolist()
        logits = torch.zeros(1, len(ids), self.vocab)
        for j, t in enumerate(ids):
            before = [i for i in range(j) if ids[i] == t]
            guess = ids[before[-1] + 1] if before else 0
            logits[0, j, (guess + self.wrong) % self.vocab] = 1.0
        return type("Out", (), {"logits": logits})()


def test_induction_scores_the_copy_of_the_repeat() -> None:
    pool = list(range(1000))  # large: a token rarely recurs inside the gap
    assert induction(_Copier(1000), pool, 100, rows=4) > 0.9
    assert induction(_Copier(1000, wrong=True), pool, 100, rows=4) < 0.05


def test_a_random_init_copies_nothing(tiny_qwen3_dir: str) -> None:
    policy = load_policy(tiny_qwen3_dir)
    assert induction(policy.model, copy_pool(policy.processor.tokenizer), 0, rows=4) < 0.05


def _trainer(copy: int, align: int, total: int = 40) -> PriorTrainer:
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return PriorTrainer(
        list(range(9)), model, None, opt, 4, 1.0, total_steps=total, lr=0.1, seed=4,
        warmup_steps=5, lr_decay="cosine", align=[100, 101, 102], align_steps=align,
        copy_steps=copy, pool=POOL,
    )  # fmt: skip


def test_the_copy_stage_comes_first_and_the_later_stages_run_as_without_it() -> None:
    staged, plain = _trainer(copy=12, align=3), _trainer(copy=0, align=3)
    assert [t.ids for t in staged.batch(0)] == [t.ids for t in copy_batch(4, 0, 4, POOL)]
    assert all(t.episode_id.startswith("copy-") for s in range(12) for t in staged.batch(s))
    assert [staged.batch(12 + s) for s in range(10)] == [plain.batch(s) for s in range(10)]
    # the stage: a warm-up then its constant peak; after it, the schedule without the stage
    assert [staged.lr_share(s) for s in (0, 4, 5, 11)] == [0.2, 1.0, 1.0, 1.0]
    shifted = [staged.lr_share(12 + s) for s in range(28)]
    without = _trainer(copy=0, align=3, total=28)  # the same steps after the stage
    assert shifted == [without.lr_share(s) for s in range(28)]
    assert shifted[0] == 0.2 and shifted[-1] == pytest.approx(0.1)  # warm-up again, cosine down
    assert [staged.stage(s) for s in (0, 11, 12, 14, 15, 39)] == [
        ("copy", 0), ("copy", 11), ("align", 0), ("align", 2), ("mixture", 3), ("mixture", 27)
    ]  # fmt: skip
    staged._set_lr(3)  # the optimiser's rate is the share's
    assert staged.optimizer.param_groups[0]["lr"] == pytest.approx(0.1 * staged.lr_share(3))
    again = _trainer(copy=12, align=3)  # a resumed trainer: everything a function of the step
    assert [again.batch(s) for s in range(13, 18)] == [staged.batch(s) for s in range(13, 18)]
    assert [t.ids for t in again.batch(10)] == [t.ids for t in staged.batch(10)]


def test_the_trainer_takes_the_stage_and_its_pool_from_the_config(
    tmp_path, short_synth, tiny_qwen3_dir: str
) -> None:
    cfg = TrainConfig.model_validate(
        {
            "out_dir": str(tmp_path),
            "data": str(short_synth / "base.parquet"),
            "model": {"path": tiny_qwen3_dir},
            "video": {"overview_max_pixels": 64 * 64},
            "prior": {"steps": 6, "batch_size": 2, "tool_mix": 1.0, "copy_steps": 2},
        }
    )
    session = PolicySession.create(cfg.model, cfg.prior)
    t = PriorTrainer.build(cfg, session)
    assert t.copy_steps == 2 and t.pool == copy_pool(session.processor.tokenizer)
    assert t.batch(1)[0].episode_id == "copy-1-0" and not t.batch(2)[0].episode_id.startswith("c")
    with pytest.raises(ValidationError, match="leave no step"):
        PriorConfig(steps=100, copy_steps=60, align_steps=40)


def test_the_base_check_reads_the_copy_at_a_gap_of_100() -> None:
    def holds(induction: dict[str, float] | None) -> bool:
        return base_checks({"induction": induction})["base_copies_in_context"]["holds"]

    assert holds({"0": 0.9, "100": 0.85, "250": 0.7})
    assert not holds({"0": 1.0, "100": 0.5, "250": 0.1})
    assert not holds(None)  # not measured: not held
