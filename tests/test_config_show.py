"""`paravt config show` explains every field (issue 32): each field's description is a comment
above it, the text is still YAML that loads back into the same config, and the overview budget
says which `--nframes` sets it."""

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
    comment = " ".join(line.strip().removeprefix("# ") for line in lines[:at][::-1][:12]
                       if line.strip().startswith("#"))
    assert "--nframes" in comment and "infer" in comment and "data import" in comment
    assert all(len(line) <= 100 for line in lines)


def test_every_field_line_has_its_description_above_it() -> None:
    res = CliRunner().invoke(app, ["config", "show"])
    lines = res.output.splitlines()
    fields = [i for i, line in enumerate(lines) if not line.lstrip().startswith("#")]
    assert fields and all(i > 0 and lines[i - 1].lstrip().startswith("#") for i in fields)
