"""`paravt train prior`: the simulated tool prior trains (a few steps lower the loss) through the
same loop, checkpoint and CLI as SFT."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paravt.cli import app
from paravt.config import TrainConfig, save
from paravt.errors import DataError
from paravt.jsonl import read_jsonl as read_log
from paravt.rl.loop import run_training
from paravt.rl.registry import TRAINERS


def _cfg(out: Path, short_synth: Path, model: str, **prior: object) -> TrainConfig:
    return TrainConfig.model_validate(
        {
            "out_dir": str(out),
            "data": str(short_synth / "rl.parquet"),
            "model": {"path": model},
            "video": {"overview_max_pixels": 64 * 64},
            "prior": {
                "steps": 8,
                "lr": 3e-3,
                "batch_size": 3,
                "warmup_steps": 0,
                "think_sentences": 3,
                "tool_mix": 1.0,
                **prior,
            },
        }
    )


def test_prior_is_a_registered_trainer_and_lowers_the_loss(
    tmp_path: Path, short_synth: Path, tiny_qwen3_dir: str
) -> None:
    assert "prior" in TRAINERS
    out = run_training(
        _cfg(tmp_path / "prior", short_synth, tiny_qwen3_dir), kind="prior", progress=False
    )
    losses = [r["train/loss"] for r in read_log(out / "train_log.jsonl")]
    assert len(losses) == 8
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3
    assert (out / "model" / "config.json").is_file()
    lrs = [r["train/lr"] for r in read_log(out / "train_log.jsonl")]  # the default cosine schedule
    assert lrs[0] == pytest.approx(3e-3) and lrs[-1] == pytest.approx(3e-4)
    assert all(a > b for a, b in zip(lrs, lrs[1:]))


def test_lr_scale_warms_up_then_holds_or_falls_by_cosine() -> None:
    from paravt.rl.sft import lr_scale

    assert [lr_scale(s, 10, 2, "constant", 0.1) for s in (0, 1, 2, 9)] == [0.5, 1.0, 1.0, 1.0]
    cos = [lr_scale(s, 12, 2, "cosine", 0.1) for s in range(12)]
    assert cos[:3] == [0.5, 1.0, 1.0] and cos[-1] == pytest.approx(0.1)
    assert cos[7] == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 5 / 9)))
    assert lr_scale(50, 12, 2, "cosine", 0.1) == pytest.approx(
        0.1
    )  # resumed past the end: the floor


def test_cli_train_prior_runs_the_configured_steps(
    tmp_path: Path, short_synth: Path, tiny_qwen3_dir: str
) -> None:
    cfg_path = tmp_path / "prior.yaml"
    save(_cfg(tmp_path / "run", short_synth, tiny_qwen3_dir, steps=2, tool_mix=0.0), cfg_path)
    res = CliRunner().invoke(app, ["train", "prior", "--config", str(cfg_path)])
    assert res.exit_code == 0, res.output
    assert len(read_log(tmp_path / "run" / "train_log.jsonl")) == 2


def test_prior_on_a_file_without_prompts_is_a_clear_error(
    tmp_path: Path, short_synth: Path, tiny_qwen3_dir: str
) -> None:
    cfg = _cfg(tmp_path / "bad", short_synth, tiny_qwen3_dir)
    cfg.data = str(short_synth / "sft.parquet")
    with pytest.raises(DataError, match="sft.parquet holds no prompts"):
        run_training(cfg, kind="prior", progress=False)


def test_a_base_build_is_deterministic(
    tmp_path: Path, short_synth: Path, tiny_qwen3_dir: str
) -> None:
    """The same code and settings give the same weights, bit for bit (a base is built once and
    shared by every run whose settings match: a rebuild must not be another base); another seed
    gives other weights (so the comparison can fail)."""
    from safetensors.torch import load_file

    def build_once(name: str, seed: int) -> dict[str, object]:
        out = run_training(
            _cfg(tmp_path / name, short_synth, tiny_qwen3_dir, steps=3, seed=seed),
            kind="prior",
            progress=False,
        )
        return load_file(str(out / "model" / "model.safetensors"))

    a, b, other = build_once("a", 0), build_once("b", 0), build_once("c", 1)
    assert a.keys() == b.keys()
    assert all(a[k].equal(b[k]) for k in a)  # type: ignore[attr-defined]
    assert not all(a[k].equal(other[k]) for k in a)  # type: ignore[attr-defined]
