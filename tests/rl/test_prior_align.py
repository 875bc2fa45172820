"""The base's alignment stage (`prior.align_steps`): its first steps draw from the perception rows
alone, then the whole mixture comes in the order it has without the stage."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from paravt.config import PriorConfig, TrainConfig
from paravt.data.schema import read_rows
from paravt.data.synth.base import SEE, is_perception_row
from paravt.errors import DataError
from paravt.rl.prior import PriorTrainer
from paravt.rl.session import PolicySession
from paravt.rl.sft import SFTTrainer


def _trainers(n: int, align: list[int], steps: int, seed: int) -> tuple[PriorTrainer, SFTTrainer]:
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    examples: list = list(range(n))  # batch() only indexes the examples
    kw = {"total_steps": 20, "lr": 0.1, "seed": seed}
    staged = PriorTrainer(
        examples, model, None, opt, 4, 1.0, **kw, align=list(align), align_steps=steps
    )
    return staged, SFTTrainer(examples, model, None, opt, 4, 1.0, **kw)


def test_the_first_steps_draw_the_perception_rows_then_the_mixture_as_without_them() -> None:
    align = [100, 101, 102, 103, 104]
    staged, plain = _trainers(n=11, align=align, steps=3, seed=7)
    picks = [x for s in range(3) for x in staged.batch(s)]  # 12 picks: 2 epochs and a bit
    by_hand = []
    for epoch in range(3):
        perm = list(align)
        random.Random(f"align:7:{epoch}").shuffle(perm)
        by_hand += perm
    assert picks == by_hand[:12]
    assert sorted(picks[:5]) == align and sorted(picks[5:10]) == align  # whole epochs
    # after the stage, the mixture's batches as a trainer without it has them from its step 0
    assert [staged.batch(s) for s in range(3, 9)] == [plain.batch(s) for s in range(6)]
    assert not set(align) & {x for s in range(3, 9) for x in staged.batch(s)}


def test_without_the_stage_the_batches_are_the_plain_trainers() -> None:
    staged, plain = _trainers(n=9, align=[50, 51], steps=0, seed=2)
    assert [staged.batch(s) for s in range(5)] == [plain.batch(s) for s in range(5)]


def test_perception_rows_are_the_clip_rows(short_synth: Path) -> None:
    rows = read_rows(short_synth / "base.parquet")
    clips = [r for r in rows if is_perception_row(r)]
    assert clips and all(SEE in r.id and r.kind == "sub" for r in clips)
    # the overview QA, the reading drills (some are kind=sub) and the prompts are not
    others = [r for r in rows if not is_perception_row(r)]
    assert {"-ovq-", "-read-"} <= {m for r in others for m in ("-ovq-", "-read-") if m in r.id}
    assert any(getattr(r, "kind", None) == "sub" for r in others)  # the stamp drills


def test_the_trainer_aligns_on_exactly_the_clip_rows_sequences(
    short_synth: Path, prior_cfg: Callable[..., TrainConfig]
) -> None:
    data = short_synth / "base.parquet"
    cfg = prior_cfg(data, align_steps=2)
    session = PolicySession.create(cfg.model, cfg.prior)
    t = PriorTrainer.build(cfg, session)
    clips = [r for r in read_rows(data) if is_perception_row(r)]
    assert t.align_steps == 2 and len(t.align) == len(clips)
    assert all(any(a is e for e in t.examples) for a in t.align)  # the mixture's own sequences
    assert {id(x) for s in range(2) for x in t.batch(s)} <= {id(a) for a in t.align}


def test_an_alignment_stage_needs_perception_rows_and_a_mixture_after_it(
    short_synth: Path, prior_cfg: Callable[..., TrainConfig]
) -> None:
    cfg = prior_cfg(short_synth / "rl.parquet", align_steps=2)
    session = PolicySession.create(cfg.model, cfg.prior)
    with pytest.raises(DataError, match="holds none"):
        PriorTrainer.build(cfg, session)
    with pytest.raises(ValidationError, match="leave no step"):
        PriorConfig(steps=100, align_steps=100)
    assert PriorConfig(steps=100, align_steps=99).align_steps == 99
