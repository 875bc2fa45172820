"""Issue 34 item 2: a training run never reports success over a broken model. A step that leaves
the loss or a parameter non-finite stops the run with one line naming the step and the knob (exit
2 through the CLI), nothing of it is saved, and resume uses the last good checkpoint."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from paravt.config import TrainConfig
from paravt.data.synth.build import build
from paravt.errors import TrainingError
from paravt.rl.checkpoint import resume_point
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
        "rollout": {"max_turns": 1},
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
    weights = load_file(str(ckpt / "model" / "model.safetensors"))
    return all(bool(torch.isfinite(t).all()) for t in weights.values())


@pytest.mark.timeout(300)
def test_sft_with_a_huge_lr_stops_at_the_diverged_step_and_keeps_the_last_good_checkpoint(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str
) -> None:
    """The issue's probe through the real CLI: the first update at lr=1e30 blows the weights up, the
    second step's loss is nan. Before: the run said done and saved an all-NaN model."""
    import yaml

    out = tmp_path / "run"
    cfg = tmp_path / "sft.yaml"
    cfg.write_text(yaml.safe_dump(_cfg(out, synth / "sft.parquet", tiny_qwen3_dir)))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "paravt",
            "train",
            "sft",
            "--config",
            str(cfg),
            "--set",
            "sft.lr=1e30",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "done" not in proc.stdout + proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if "diverged" in ln]
    assert len(errors) == 1 and proc.stderr.rstrip().endswith(errors[0].rstrip()), proc.stderr
    assert "train sft: step 2 diverged: the loss is nan" in errors[0] and "sft.lr" in errors[0]
    assert "step_000001" in errors[0]
    assert not (out / "model").exists()  # never a saved model over a broken run
    point = resume_point(out / "checkpoints")
    assert (
        point.checkpoint is not None
        and point.checkpoint.name == "step_000001"
        and point.skipped == ()
    )
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step_000001"]
    assert _finite_weights(point.checkpoint)


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
    monkeypatch.setattr(SFTTrainer, "step", lambda self, step: {"loss": math.nan, "lr": 1e-3})
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
    check_step(1, {"loss": 0.5}, model, kind="sft", checkpoints=tmp_path)  # finite: goes on
    with torch.no_grad():
        model[1].bias[0] = math.nan
        model[0].weight[1, 2] = -math.inf
    assert broken_parameters(model) == ["0.weight", "1.bias"]
    with pytest.raises(
        TrainingError,
        match=r"step 7 diverged: 2 parameter tensor\(s\) hold inf or nan \(first: 0.weight\)",
    ):
        check_step(7, {"loss": 0.5}, model, kind="sft", checkpoints=tmp_path)
