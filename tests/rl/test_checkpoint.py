"""Checkpoints: atomic directories, crash leftovers ignored, overwrite, RNG and optimizer
round-trip."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import numpy as np
import torch

from paravt.models.hf.loading import LoadedPolicy, load_policy
from paravt.rl.checkpoint import (
    latest_checkpoint,
    load_trainer_state,
    rng_state,
    save_checkpoint,
    set_rng_state,
)


def _draws() -> tuple[float, float, list[float]]:
    return random.random(), float(np.random.rand()), torch.rand(3).tolist()


def _save(root: Path, step: int, policy: LoadedPolicy, **state) -> Path:
    return save_checkpoint(
        root,
        step,
        model=policy.model,
        processor=policy.processor,
        optimizer=None,
        state=dict(state),
    )


def test_latest_checkpoint_ignores_tmp_old_and_incomplete_dirs(tmp_path: Path, policy) -> None:
    _save(tmp_path, 1, policy)
    # a crash while writing step 2: everything written, but the rename never happened
    tmp = tmp_path / "step_000002.tmp"
    (tmp / "model").mkdir(parents=True)
    (tmp / "state.json").write_text(json.dumps({"step": 2}))
    (tmp_path / "step_000003.old").mkdir()
    (tmp_path / "step_000003.old" / "state.json").write_text("{}")
    (tmp_path / "step_000004").mkdir()  # no state.json: not a finished checkpoint
    (tmp_path / "notes").mkdir()
    assert latest_checkpoint(tmp_path) == tmp_path / "step_000001"


def test_latest_checkpoint_orders_by_step_and_handles_a_missing_root(
    tmp_path: Path, policy
) -> None:
    assert latest_checkpoint(tmp_path / "nothing-here") is None
    assert latest_checkpoint(tmp_path) is None
    for step in (9, 10, 2):
        _save(tmp_path, step, policy)
    assert latest_checkpoint(tmp_path) == tmp_path / "step_000010"


def test_saving_over_a_leftover_tmp_and_over_an_existing_step_keeps_the_new_state(
    tmp_path: Path, policy
) -> None:
    stale = tmp_path / "step_000002.tmp"
    stale.mkdir(parents=True)
    (stale / "garbage.bin").write_bytes(b"x")
    first = _save(tmp_path, 2, policy, epoch=0, position=5)
    assert not (first / "garbage.bin").exists()
    second = _save(tmp_path, 2, policy, epoch=1, position=7)
    assert first == second == tmp_path / "step_000002"
    state, blob = load_trainer_state(second)
    assert (state["step"], state["epoch"], state["position"]) == (2, 1, 7)
    assert blob["optimizer"] is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_000002"]  # no .tmp / .old left over


def test_checkpoint_model_loads_back_with_identical_weights(tmp_path: Path, policy) -> None:
    ckpt = _save(tmp_path, 3, policy)
    loaded = load_policy(str(ckpt / "model"))
    want = policy.model.state_dict()
    got = loaded.model.state_dict()
    assert want.keys() == got.keys()
    assert all(torch.equal(want[k], got[k]) for k in want)


def test_rng_states_round_trip_through_a_checkpoint(tmp_path: Path, policy) -> None:
    random.seed(11)
    np.random.seed(12)
    torch.manual_seed(13)
    _draws()  # move every stream away from its seed point
    ckpt = _save(tmp_path, 4, policy)
    expected = _draws()
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    assert _draws() != expected  # the streams really were disturbed
    _, blob = load_trainer_state(ckpt)
    set_rng_state(blob["rng"])
    assert _draws() == expected


def test_rng_state_round_trips_in_memory() -> None:
    state = rng_state()
    first = _draws()
    set_rng_state(state)
    assert _draws() == first


def test_optimizer_state_round_trip_continues_identically(tmp_path: Path, policy) -> None:
    """Two AdamW steps uninterrupted == one step, save, reload into a fresh optimizer, one step."""

    def step(model, opt) -> None:
        opt.zero_grad()
        sum((p.float() ** 2).sum() for p in model.parameters()).backward()
        opt.step()

    a = copy.deepcopy(policy.model)
    opt_a = torch.optim.AdamW(a.parameters(), lr=1e-2)
    step(a, opt_a)
    ckpt = save_checkpoint(
        tmp_path, 1, model=a, processor=policy.processor, optimizer=opt_a, state={}
    )
    step(a, opt_a)

    b = load_policy(str(ckpt / "model")).model
    opt_b = torch.optim.AdamW(b.parameters(), lr=1e-2)
    opt_b.load_state_dict(load_trainer_state(ckpt)[1]["optimizer"])
    step(b, opt_b)
    sa, sb = a.state_dict(), b.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
