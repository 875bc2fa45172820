"""The base's report stage (`prior.report_steps`): its last steps draw from the text report drills
alone at a constant rate after a warm-up; the steps before it are a base without the stage."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from paravt.config import PriorConfig, TrainConfig
from paravt.data.schema import read_rows
from paravt.data.synth.drills import READ, is_report_drill
from paravt.errors import DataError
from paravt.rl.prior import PriorTrainer
from paravt.rl.session import PolicySession

REPORT = [200, 201, 202, 203, 204, 205]


def _trainer(report: int, total: int = 40, copy: int = 0, replay: float = 0.0) -> PriorTrainer:
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return PriorTrainer(
        list(range(9)), model, None, opt, 4, 1.0, total_steps=total, lr=0.1, seed=5,
        warmup_steps=5, lr_decay="cosine", align=[100, 101, 102], align_steps=3,
        copy_steps=copy, pool=list(range(20, 60)), report=list(REPORT), report_steps=report,
        report_replay=replay,
    )  # fmt: skip


def test_the_last_steps_draw_the_report_drills_after_a_base_without_the_stage() -> None:
    staged, plain = _trainer(report=10), _trainer(report=0, total=30)
    # the first 30 steps: the base of 30 steps without the stage, batches and schedule
    assert [staged.batch(s) for s in range(30)] == [plain.batch(s) for s in range(30)]
    assert [staged.lr_share(s) for s in range(30)] == [plain.lr_share(s) for s in range(30)]
    assert staged.lr_share(29) == pytest.approx(0.1)  # the cosine's end, as without the stage
    # the stage: whole seeded epochs of the report drills, nothing else
    picks = [x for s in range(30, 40) for x in staged.batch(s)]
    by_hand = []
    for epoch in range(7):
        perm = list(REPORT)
        random.Random(f"report:5:{epoch}").shuffle(perm)
        by_hand += perm
    assert picks == by_hand[:40] and sorted(picks[:6]) == REPORT
    # its own warm-up, then the constant peak (not the cosine's end)
    assert [staged.lr_share(s) for s in (30, 34, 35, 39)] == [0.2, 1.0, 1.0, 1.0]
    assert [staged.stage(s) for s in (0, 3, 29, 30, 39)] == [
        ("align", 0), ("mixture", 3), ("mixture", 29), ("report", 0), ("report", 9)
    ]  # fmt: skip


def test_the_report_stage_comes_after_the_copy_and_the_mixture() -> None:
    staged = _trainer(report=6, copy=8)
    assert [staged.stage(s)[0] for s in (7, 8, 11, 33, 34, 39)] == [
        "copy", "align", "mixture", "mixture", "report", "report"
    ]  # fmt: skip
    without = _trainer(report=0, copy=8, total=34)  # the same run, 6 steps shorter
    assert [staged.lr_share(s) for s in range(34)] == [without.lr_share(s) for s in range(34)]
    assert [staged.batch(s) for s in range(8, 34)] == [without.batch(s) for s in range(8, 34)]
    assert {x for s in range(34, 40) for x in staged.batch(s)} <= set(REPORT)


def test_report_drills_are_the_read_r_rows(short_synth: Path) -> None:
    rows = read_rows(short_synth / "base.parquet")
    reports = [r for r in rows if is_report_drill(r)]
    assert reports and all(f"{READ}r" in r.id for r in reports)
    # the stamp and option drills are reading drills too, and not report drills
    others = [r for r in rows if READ in r.id and not is_report_drill(r)]
    marks = {r.id[r.id.index(READ) : r.id.index(READ) + 7] for r in others}
    assert {f"{READ}s", f"{READ}o"} <= marks
    assert all(not r.videos and r.messages[-1].role == "assistant" for r in reports)


def test_the_trainer_reports_on_exactly_the_report_drills_sequences(
    short_synth: Path, prior_cfg: Callable[..., TrainConfig]
) -> None:
    data = short_synth / "base.parquet"
    cfg = prior_cfg(data, report_steps=2)
    t = PriorTrainer.build(cfg, PolicySession.create(cfg.model, cfg.prior))
    drills = [r for r in read_rows(data) if is_report_drill(r)]
    assert t.report_steps == 2 and len(t.report) == len(drills)
    assert all(any(a is e for e in t.examples) for a in t.report)  # the mixture's own sequences
    assert {id(x) for s in (2, 3) for x in t.batch(s)} <= {id(a) for a in t.report}
    short = prior_cfg(data, steps=2)
    plain = PriorTrainer.build(short, PolicySession.create(short.model, short.prior))
    assert [[x.ids for x in t.batch(s)] for s in (0, 1)] == [
        [x.ids for x in plain.batch(s)] for s in (0, 1)
    ]  # the mixture's steps: the base's without the stage


def test_a_report_stage_needs_report_drills_and_a_mixture_before_it(
    short_synth: Path, prior_cfg: Callable[..., TrainConfig]
) -> None:
    cfg = prior_cfg(short_synth / "rl.parquet", report_steps=2)
    with pytest.raises(DataError, match="holds none"):
        PriorTrainer.build(cfg, PolicySession.create(cfg.model, cfg.prior))
    with pytest.raises(ValidationError, match="leave no step"):
        PriorConfig(steps=100, align_steps=40, report_steps=60)
    assert PriorConfig(steps=100, align_steps=40, report_steps=59).report_steps == 59


def test_a_replay_share_of_the_report_stage_goes_on_with_the_mixture() -> None:
    """``report_replay`` 0.5 of a batch of 4: the stage's batches open with the first 2 rows of
    the batch the mixture would have next (as a base of 40 mixture steps has them), then 2 drills
    in their own seeded order; the steps before the stage are unchanged."""
    staged, longer = _trainer(report=10, replay=0.5), _trainer(report=0)
    plain = _trainer(report=10)
    assert [staged.batch(s) for s in range(30)] == [plain.batch(s) for s in range(30)]
    drills = []
    for s in range(30, 40):
        batch = staged.batch(s)
        assert batch[:2] == longer.batch(s)[:2] and all(x in range(9) for x in batch[:2])
        drills += batch[2:]
    perm = list(REPORT)
    random.Random("report:5:0").shuffle(perm)
    assert drills[:6] == perm and set(drills) <= set(REPORT) and len(drills) == 20
    assert [staged.lr_share(s) for s in (30, 39)] == [plain.lr_share(s) for s in (30, 39)]
    with pytest.raises(ValidationError, match="report_replay"):
        PriorConfig(report_replay=1.0)
    # a share that rounds to a whole batch of the mixture, or to none, or without the stage
    for bad in (
        {"report_replay": 0.95, "batch_size": 8, "report_steps": 10},
        {"report_replay": 0.05, "batch_size": 8, "report_steps": 10},
        {"report_replay": 0.5},
    ):
        with pytest.raises(ValidationError, match="a row of each kind"):
            PriorConfig(**bad)
    assert PriorConfig(report_replay=0.5, batch_size=8, report_steps=10).report_replay == 0.5
