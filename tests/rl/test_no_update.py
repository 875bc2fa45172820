"""Issue 48 item 2: ``rl.reward_scale`` has a bound, a run in which no update happened does not
exit 0, and a divergence names the knob whose quantity overflowed (the advantages: the reward
scale; the parameters: the learning rate)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from typer.testing import CliRunner

from paravt import config as cfgmod
from paravt.cli import app
from paravt.config import TrainConfig
from paravt.data.synth.build import build
from paravt.errors import ConfigError, TrainingError
from paravt.rl.health import check_step, no_update_problem
from paravt.rl.loop import run_training
from paravt.rl.sft import SFTTrainer


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = Path(tmp_path_factory.mktemp("synth"))
    build(out, videos=2, eval_videos=0, seed=0, workers=1)
    return out


def _cfg(out: Path, data: Path, model: str) -> dict[str, Any]:
    return {
        "out_dir": str(out),
        "data": str(data),
        "model": {"path": model},
        "video": {"overview_nframes": 4, "overview_max_pixels": 64 * 64},
        "sampling": {"max_new_tokens": 16, "sub_max_new_tokens": 8},
        "prior": {"batch_size": 2, "warmup_steps": 0, "save_every": 1, "steps": 3},
    }


@pytest.mark.parametrize("scale", ["1e300", "1e100", "1e30", "1001", "1e-9", "0"])
def test_a_reward_scale_out_of_its_bound_is_refused_at_load(scale: str) -> None:
    with pytest.raises(ConfigError, match=r"rl\.reward_scale"):
        cfgmod.load_for_model("/no/model", overrides=[f"rl.reward_scale={scale}"])
    for ok in ("1e-3", "10", "1000"):
        cfg, _ = cfgmod.load_for_model("/no/model", overrides=[f"rl.reward_scale={ok}"])
        assert cfg.rl.reward_scale == float(ok)


def test_a_loss_carried_out_of_range_by_the_advantages_names_the_reward_scale(
    tmp_path: Path,
) -> None:
    """|loss| ≤ max |A| × (1 + clip) plus a capped KL: advantages of 1e100 carried a loss of 1e100
    out of ±1e4 and the message blamed rl.lr; a parameter jump at sane advantages is the lr's."""
    model = torch.nn.Linear(2, 1)
    huge = {"actor/loss": -1e100, "critic/advantages/max": 1e100, "critic/advantages/min": -1e100}
    with pytest.raises(TrainingError) as err:
        check_step(1, {**huge, "actor/lr": 2e-6}, model, kind="rl", checkpoints=tmp_path)
    msg = str(err.value)
    assert "rl.reward_scale" in msg and "|advantage| up to 1e+100" in msg
    assert "the likely knob is rl.lr" not in msg
    sane = {"actor/loss": 2e5, "critic/advantages/max": 1.5, "critic/advantages/min": -1.5}
    with pytest.raises(TrainingError, match=r"the likely knob is rl\.lr"):
        check_step(1, {**sane, "actor/lr": 2e-6}, model, kind="rl", checkpoints=tmp_path)


def test_no_update_problem_says_why_each_step_was_skipped() -> None:
    skipped = {"update_skipped": 1.0, "actor/grad_norm": math.inf, "actor/loss": 0.3}
    empty = {
        "update_skipped": 1.0,
        "actor/grad_norm": 0.0,
        "tokens/trained": 0.0,
        "actor/loss": 0.0,
    }
    done = {"update_skipped": 0.0, "actor/grad_norm": 0.4, "actor/loss": 0.3}
    assert no_update_problem("rl", 1, [skipped, done], dtype="float32") is None
    assert no_update_problem("rl", 1, [], dtype="float32") is None  # nothing to run: a finished run
    msg = no_update_problem("rl", 1, [skipped, skipped, empty], dtype="float32")
    assert msg is not None and "steps 1-3" in msg and "2 with a non-finite gradient norm" in msg
    assert "1 with nothing to train on" in msg and "model.dtype" in msg
    big = {**skipped, "critic/advantages/max": 3e30, "critic/advantages/min": -1.0}
    assert "rl.reward_scale" in (no_update_problem("rl", 5, [big], dtype="float32") or "")


@pytest.mark.timeout(300)
def test_a_run_whose_every_update_was_skipped_exits_2_and_saves_no_model(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe: rl.reward_scale=1e30 ran 30 steps of update_skipped 1.0 to "rl done", exit 0,
    the saved model the starting one. Through the real app: one line, exit 2, no OUT/model; the
    log keeps every step."""
    monkeypatch.setattr(
        SFTTrainer,
        "step",
        lambda self, step: {
            "train/loss": 0.5,
            "train/grad_norm": math.nan,
            "update_skipped": 1.0,
            "train/lr": 1e-3,
        },
    )
    out = tmp_path / "run"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(_cfg(out, synth / "rl.parquet", tiny_qwen3_dir)))
    res = CliRunner().invoke(app, ["train", "prior", "--config", str(cfg)])
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.exit_code == 2 and "Traceback" not in res.stderr, res.stderr
    assert "no update happened" in lines[-1] and "steps 1-3" in lines[-1], lines[-1]
    assert not (out / "model").exists()
    assert len((out / "train_log.jsonl").read_text().splitlines()) == 3


@pytest.mark.timeout(300)
def test_a_run_with_one_real_update_finishes(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = SFTTrainer.step

    def mostly_skipped(self: SFTTrainer, step: int) -> dict[str, float]:
        if step == 1:
            return real(self, step)
        return {
            "train/loss": 0.5,
            "train/grad_norm": math.nan,
            "update_skipped": 1.0,
            "train/lr": 1e-3,
        }

    monkeypatch.setattr(SFTTrainer, "step", mostly_skipped)
    cfg = TrainConfig.model_validate(_cfg(tmp_path / "run", tmp_path / "x.parquet", tiny_qwen3_dir))
    cfg.data = str(synth / "rl.parquet")
    run_training(cfg, kind="prior", progress=False)
    assert (tmp_path / "run" / "model").is_dir()
