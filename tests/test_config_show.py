"""`paravt config show` explains every field (issue 32): each field's description is a comment
above it, the text is still YAML that loads back into the same config, and the overview budget
says which `--nframes` sets it; a config that still sets a folded frame field is told its new
home, and a checkpoint trained before carries them harmlessly."""

from __future__ import annotations

import yaml
from typer.testing import CliRunner

from paravt.cli import app
from paravt.config import TrainConfig


def test_config_show_is_commented_yaml_that_loads_back() -> None:
    res = CliRunner().invoke(app, ["config", "show"])
    assert res.exit_code == 0, res.output
    assert TrainConfig.model_validate(yaml.safe_load(res.output)) == TrainConfig()
    lines = res.output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("overview_nframes:"))
    comment = " ".join(
        line.strip().removeprefix("# ")
        for line in lines[:at][::-1][:12]
        if line.strip().startswith("#")
    )
    assert "--nframes" in comment and "infer" in comment and "data import" in comment
    assert all(len(line) <= 100 for line in lines)


def test_every_field_line_has_its_description_above_it() -> None:
    res = CliRunner().invoke(app, ["config", "show"])
    lines = res.output.splitlines()
    fields = [i for i, line in enumerate(lines) if not line.lstrip().startswith("#")]
    assert fields and all(i > 0 and lines[i - 1].lstrip().startswith("#") for i in fields)


def test_a_folded_frame_field_names_its_new_home_and_old_checkpoints_still_load(tmp_path) -> None:
    import pytest

    from paravt import config as cfgmod
    from paravt.errors import ConfigError

    (tmp_path / "c.yaml").write_text("eval:\n  nframes: 32\n")
    with pytest.raises(
        ConfigError, match=r"eval.nframes: gone; its value is set by video.overview_nframes"
    ):
        cfgmod.load(tmp_path / "c.yaml")
    ckpt = tmp_path / "ckpt"  # a checkpoint trained before issue 32 carries both old fields
    ckpt.mkdir()
    (ckpt / cfgmod.RUN_CONFIG).write_text(
        "video:\n  overview_nframes: 16\neval:\n  nframes: 64\n"
        "  benchmark_max_frames: 64\n  workers: 2\n"
    )
    cfg, _ = cfgmod.load_for_model(str(ckpt))
    assert (cfg.video.overview_nframes, cfg.eval.workers) == (16, 2)


def test_execute_tool_code_names_call_forms_and_old_checkpoints_still_load(tmp_path) -> None:
    import pytest

    from paravt import config as cfgmod
    from paravt.errors import ConfigError

    (tmp_path / "c.yaml").write_text("rollout:\n  execute_tool_code: true\n")
    with pytest.raises(
        ConfigError,
        match=r"rollout.execute_tool_code: gone; its value is set by rollout.call_forms",
    ):
        cfgmod.load(tmp_path / "c.yaml")
    (tmp_path / "d.yaml").write_text("rollout:\n  call_forms: hermes\n")
    with pytest.raises(ConfigError, match=r"rollout.call_forms: .*'release' or 'per_call'"):
        cfgmod.load(tmp_path / "d.yaml")
    ckpt = tmp_path / "ckpt"  # trained before issue 46
    ckpt.mkdir()
    (ckpt / cfgmod.RUN_CONFIG).write_text("rollout:\n  execute_tool_code: false\n  k_max: 4\n")
    cfg, _ = cfgmod.load_for_model(str(ckpt))
    assert (cfg.rollout.k_max, cfg.rollout.call_forms) == (4, "release")


def test_include_subagent_rows_names_the_share_and_old_checkpoints_still_load(tmp_path) -> None:
    """The boolean became a share (`sft.subagent_rows`, docs/fidelity.md rows 69-70): a config
    that still sets it is told where it went, a checkpoint that carries it still loads."""
    import pytest

    from paravt import config as cfgmod
    from paravt.errors import ConfigError

    (tmp_path / "c.yaml").write_text("sft:\n  include_subagent_rows: true\n")
    with pytest.raises(
        ConfigError, match=r"sft.include_subagent_rows: gone; its value is set by sft.subagent_rows"
    ):
        cfgmod.load(tmp_path / "c.yaml")
    ckpt = tmp_path / "ckpt"  # trained before the share
    ckpt.mkdir()
    (ckpt / cfgmod.RUN_CONFIG).write_text("sft:\n  include_subagent_rows: true\n  lr: 0.001\n")
    cfg, _ = cfgmod.load_for_model(str(ckpt))
    assert (cfg.sft.lr, cfg.sft.subagent_rows) == (0.001, 0.0)
