"""Issue 34 item 2: a training run never reports success over a broken model. A step that leaves
the loss or a parameter non-finite stops the run with one line naming the step and the knob (exit
2 through the CLI), nothing of it is saved, and resume uses the last good checkpoint."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from paravt.cli import app
from paravt.config import TrainConfig
from paravt.data.synth.build import build
from paravt.errors import TrainingError
from paravt.rl.grpo import GRPOTrainer
from paravt.rl.health import broken_parameters, check_step
from paravt.rl.loop import run_training
from paravt.rl.sft import SFTTrainer


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = Path(tmp_path_factory.mktemp("synth"))
    build(out, videos=2, eval_videos=0, seed=0, workers=1)
    return out


def _cfg(out: Path, data: Path, model: str, **sections: dict[str, Any]) -> dict[str, Any]:
    base: dict[str, Any] = {
        "out_dir": str(out),
        "data": str(data),
        "model": {"path": model},
        "video": {
            "overview_nframes": 4,
            "overview_max_pixels": 64 * 64,
            "crop_max_pixels": 64 * 64,
            "crop_max_frames": 4,
        },
        "sampling": {"max_new_tokens": 16, "sub_max_new_tokens": 8},
        "rollout": {"max_turns": 0},
        "sft": {"batch_size": 2, "warmup_steps": 0, "save_every": 1, "max_steps": 4},
        "prior": {"batch_size": 2, "warmup_steps": 0, "save_every": 1, "steps": 3},
        "rl": {
            "group_size": 2,
            "prompts_per_step": 1,
            "steps": 3,
            "save_every": 1,
            "kl_coef": 0.0,
            "gating": {"choices": [4]},
        },
    }
    for name, values in sections.items():
        base[name] = {**base.get(name, {}), **values}
    return base


def _finite_weights(ckpt: Path) -> bool:
    """The saved model under ``ckpt`` (a checkpoint or a run directory) is all finite."""
    weights = load_file(str(ckpt / "model" / "model.safetensors"))
    return all(bool(torch.isfinite(t).all()) for t in weights.values())


@pytest.mark.parametrize("knob", ["sft.lr=1e30", "rl.lr=1e30", "prior.lr=0.5", "rl.lr=0.02"])
def test_a_learning_rate_out_of_its_trainers_range_is_refused_by_name(
    tmp_path: Path, synth: Path, knob: str
) -> None:
    """Issue 41 item 1: `train rl --set rl.lr=1e30` used to end "rl done", exit 0, with a model
    that writes only <|endoftext|>. Each trainer's lr has a bound (rl 1e-2, sft and prior 0.1)."""
    import yaml

    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(_cfg(tmp_path / "run", synth / "sft.parquet", "no-model")))
    kind = knob.split(".")[0]
    res = CliRunner().invoke(app, ["train", kind, "--config", str(cfg), "--set", knob])
    assert res.exit_code == 2 and "Traceback" not in res.stderr
    assert f"{kind}.lr" in res.stderr and "less than or equal" in res.stderr, res.stderr


@pytest.mark.timeout(300)
def test_weights_blown_up_but_finite_stop_the_run_before_their_checkpoint_and_resume_works(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41 item 1 through the real app: step 2 leaves weights of 1e29, finite (what SFT at
    lr=1e30 did: the step-1 checkpoint it kept already held them, and --resume diverged again).
    The run stops at step 2 naming sft.lr, step 1's checkpoint is the last one, and --resume
    finishes from it."""
    import yaml

    out = tmp_path / "run"
    cfg = tmp_path / "sft.yaml"
    cfg.write_text(yaml.safe_dump(_cfg(out, synth / "sft.parquet", tiny_qwen3_dir)))
    real = SFTTrainer.step

    def blowing_up(self: SFTTrainer, step: int) -> dict[str, float]:
        metrics = real(self, step)
        if step == 1:
            with torch.no_grad():
                for p in self.model.parameters():
                    p.mul_(1e29)
        return metrics

    monkeypatch.setattr(SFTTrainer, "step", blowing_up)
    res = CliRunner().invoke(app, ["train", "sft", "--config", str(cfg)])
    assert res.exit_code == 2 and "Traceback" not in res.stderr, res.stderr
    line = res.stderr.strip().splitlines()[-1]
    assert "train sft: step 2 diverged: parameter " in line and "in one step" in line, line
    assert "sft.lr" in line and "step_000001" in line
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step_000001"]
    assert not (out / "model").exists()
    peak = max(
        float(t.abs().max())
        for t in load_file(
            str(out / "checkpoints" / "step_000001" / "model" / "model.safetensors")
        ).values()
    )
    assert peak < 100  # the kept checkpoint holds none of the damage

    monkeypatch.setattr(SFTTrainer, "step", real)
    res = CliRunner().invoke(app, ["train", "sft", "--config", str(cfg), "--resume"])
    assert res.exit_code == 0, res.stderr
    assert _finite_weights(out) and (out / "model").is_dir()


@pytest.mark.timeout(300)
def test_rl_step_that_breaks_a_parameter_stops_before_its_checkpoint(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step whose update leaves a parameter inf (simulated after the real step 2) is named with
    the parameter and rl.lr; step 2's checkpoint is never written."""
    real = GRPOTrainer.step

    def breaking(self: GRPOTrainer, step: int) -> dict[str, float]:
        metrics = real(self, step)
        if step == 1:
            with torch.no_grad():
                next(self.s.model.parameters()).view(-1)[0] = math.inf
        return metrics

    monkeypatch.setattr(GRPOTrainer, "step", breaking)
    cfg = TrainConfig.model_validate(_cfg(tmp_path / "run", synth / "rl.parquet", tiny_qwen3_dir))
    with pytest.raises(TrainingError) as err:
        run_training(cfg, kind="rl", progress=False)
    assert "train rl: step 2 diverged: 1 parameter tensor(s) hold inf or nan" in str(err.value)
    assert "rl.lr" in str(err.value) and "step_000001" in str(err.value)
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir()) == ["step_000001"]
    assert not (tmp_path / "run" / "model").exists()


def test_a_nan_loss_at_the_first_step_says_no_checkpoint_was_written(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        SFTTrainer, "step", lambda self, step: {"train/loss": math.nan, "train/lr": 1e-3}
    )
    cfg = TrainConfig.model_validate(_cfg(tmp_path / "run", synth / "rl.parquet", tiny_qwen3_dir))
    with pytest.raises(
        TrainingError,
        match=r"train prior: step 1 diverged: the loss is nan; .*no checkpoint "
        r"was written before it.*prior\.lr \(this step ran at lr=0\.001\)",
    ):
        run_training(cfg, kind="prior", progress=False)
    assert (
        not (tmp_path / "run" / "model").exists()
        and not (tmp_path / "run" / "checkpoints").exists()
    )


def test_broken_parameters_names_only_the_non_finite_tensors(tmp_path: Path) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    assert broken_parameters(model) == []
    check_step(1, {"train/loss": 0.5}, model, kind="sft", checkpoints=tmp_path)  # finite: goes on
    with torch.no_grad():
        model[1].bias[0] = math.nan
        model[0].weight[1, 2] = -math.inf
    assert broken_parameters(model) == ["0.weight", "1.bias"]
    with pytest.raises(
        TrainingError,
        match=r"step 7 diverged: 2 parameter tensor\(s\) hold inf or nan \(first: 0.weight\)",
    ):
        check_step(7, {"train/loss": 0.5}, model, kind="sft", checkpoints=tmp_path)


def test_a_jump_past_the_floor_a_ceiling_or_a_huge_loss_is_divergence(tmp_path: Path) -> None:
    """Finite but out of range (issue 41 item 1): per tensor, more than GROWTH times its peak of
    the step before (and past FLOOR), past CEILING, or a loss beyond ±MAX_LOSS."""
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    with torch.no_grad():
        model[0].weight.fill_(0.5)
        model[0].bias.zero_()
    start = check_step(1, {"train/loss": 0.5}, model, kind="rl", checkpoints=tmp_path)
    with torch.no_grad():
        model[0].bias.fill_(0.9)  # from 0: a large ratio, but below FLOOR: a normal update
        model[0].weight.fill_(1.9)  # 3.8 times: within GROWTH
    after = check_step(2, {"train/loss": 0.5}, model, kind="rl", checkpoints=tmp_path, before=start)
    with torch.no_grad():
        model[0].weight.fill_(8.0)  # 4.2 times the step before and past FLOOR
    with pytest.raises(
        TrainingError,
        match=r"step 3 diverged: parameter 0.weight grew from "
        r"\|w\| = 1.9 to 8 in one step .*rl\.lr",
    ):
        check_step(3, {"train/loss": 0.5}, model, kind="rl", checkpoints=tmp_path, before=after)
    with torch.no_grad():
        model[0].weight.fill_(2e4)
    with pytest.raises(TrainingError, match=r"parameter 0.weight reached \|w\| = 2e\+04"):
        check_step(4, {"train/loss": 0.5}, model, kind="rl", checkpoints=tmp_path, start=start)
    with torch.no_grad():
        model[0].weight.fill_(0.5)
    with pytest.raises(TrainingError, match=r"the loss is -2e\+05, outside the sane range"):
        check_step(5, {"train/loss": -2e5}, model, kind="rl", checkpoints=tmp_path, before=start)


def test_an_rl_step_whose_every_rollout_failed_stops_the_run(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41 item 2 for RL: a generator that fails every request used to train on nothing (every
    group dropped as an error) through to "rl done"; now step 1 stops the run, nothing saved."""
    import paravt.rl.grpo as grpo
    from paravt.models.base import error_output

    class Failing:
        async def generate(self, requests: list[Any]) -> list[Any]:
            return [error_output("the replica died") for _ in requests]

    real = grpo.run_group

    async def failing_group(inputs: Any, *, generator: Any, **kw: Any) -> Any:
        return await real(inputs, generator=Failing(), **kw)

    monkeypatch.setattr(grpo, "run_group", failing_group)
    cfg = TrainConfig.model_validate(_cfg(tmp_path / "run", synth / "rl.parquet", tiny_qwen3_dir))
    with pytest.raises(TrainingError, match=r"train rl: step 1: every rollout group failed \(1 "):
        run_training(cfg, kind="rl", progress=False)
    assert not (tmp_path / "run" / "model").exists()
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_an_empty_parameter_tensor_is_no_divergence(tmp_path: Path) -> None:
    model = torch.nn.Module()
    model.empty = torch.nn.Parameter(torch.empty(0))
    model.w = torch.nn.Parameter(torch.ones(2))
    peaks = check_step(1, {"train/loss": 0.1}, model, kind="sft", checkpoints=tmp_path)
    assert peaks.values == (0.0, 1.0) and broken_parameters(model) == []
