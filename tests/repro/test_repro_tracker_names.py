"""`paravt repro` names each training stage for the trackers and groups a run's variants and seeds
(docs/tracking.md): the group is the repro directory's name unless ``--set logging.group`` says
otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from paravt.repro.presets import PRESETS, base_config, with_config_overrides
from paravt.repro.training import train_stage


def test_each_stage_is_a_named_run_in_the_repro_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = []
    monkeypatch.setattr(
        "paravt.rl.loop.run_training", lambda c, kind, resume: seen.append((c, kind))
    )
    out = tmp_path / "my-repro"
    cfg = base_config(out, PRESETS["micro"])
    train_stage(cfg, "rl", out / "paragrpo" / "seed1", "paragrpo seed 1", run_name="paragrpo/seed1")
    train_stage(cfg, "sft", out / "sft_strong", "SFT", run_name="sft_strong")
    assert [(c.logging.run_name, c.logging.group, k) for c, k in seen] == [
        ("paragrpo/seed1", "my-repro", "rl"),
        ("sft_strong", "my-repro", "sft"),
    ]
    assert cfg.logging.run_name is None  # the shared config is not changed by a stage
    chosen = with_config_overrides(
        cfg, ["logging.group=sweep-3", "logging.loggers=[console,wandb]"]
    )
    assert (chosen.logging.group, chosen.logging.loggers) == ("sweep-3", ["console", "wandb"])
