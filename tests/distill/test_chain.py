"""Issue 41 item 5: every command's output is valid input of the next, with no extra flag. The
chain synth → `data distill` → `data check` → `train sft` → `eval`, each reading only what the one
before wrote (no ``--root``, no ``data_root``: distill used to write video paths relative to its
input's folder, so its own output failed `data check` with "video_missing"). Then a trace whose
crop window lies outside its video: `data check` names the row (rule ``video_window``) and `train
sft` skips it as a data error instead of aborting without naming the row or the file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from scripted_teacher import RunningServer, State, make_app, scripts_for, unique_rows
from typer.testing import CliRunner

from paravt.cli import app
from paravt.data.rows import SFTRow, VideoPart
from paravt.data.schema import read_rows, write_rows

runner = CliRunner()


@pytest.mark.timeout(600)
def test_synth_distill_check_train_eval_on_the_outputs_alone(
    synth: Path, tmp_path: Path, tiny_qwen3_dir: str
) -> None:
    out = tmp_path / "distilled"
    with RunningServer(make_app(State(scripts_for(unique_rows(synth))))) as teacher:
        res = runner.invoke(
            app,
            ["data", "distill", "--data", str(synth / "base.parquet"), "--limit", "3"]
            + ["--teacher", teacher.url, "--teacher-model", "scripted", "--out", str(out)]
            + ["--workers", "1", "--json"],
        )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout.strip().splitlines()[-1])["accepted"] >= 1
    assert (out / "videos").is_symlink()  # the output's paths resolve under the output

    res = runner.invoke(app, ["data", "check", str(out / "sft.parquet")])
    assert res.exit_code == 0, res.output
    assert f"{out / 'sft.parquet'}: " in res.stdout and "0 failed" in res.stdout

    cfg = {
        "out_dir": str(tmp_path / "sft"),
        "data": str(out / "sft.parquet"),
        "model": {"path": tiny_qwen3_dir},
        "video": {"overview_nframes": 4, "overview_max_pixels": 4096, "crop_max_pixels": 4096},
        "sft": {"batch_size": 2, "warmup_steps": 0, "max_steps": 2, "save_every": 100},
    }
    (tmp_path / "sft.yaml").write_text(yaml.safe_dump(cfg))
    res = runner.invoke(app, ["train", "sft", "--config", str(tmp_path / "sft.yaml")])
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "sft" / "data_errors.json").exists()

    args = [
        "eval",
        "--model",
        str(tmp_path / "sft" / "model"),
        "--data",
        str(synth / "base.parquet"),
    ]
    args += [
        "--limit",
        "1",
        "--mode",
        "none",
        "--max-new-tokens",
        "4",
        "--out",
        str(tmp_path / "ev"),
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "ev" / "metrics.json").read_text())["summary"]["n"] == 1

    # a trace whose crop asks for seconds past its video's end
    rows = read_rows(out / "sft.parquet")
    bad = next(r for r in rows if isinstance(r, SFTRow) and r.kind == "main")
    dur = bad.extra_info.duration
    messages = list(bad.messages)
    for i, m in enumerate(messages):
        parts = m.content if not isinstance(m.content, str) else ()
        if any(isinstance(p, VideoPart) for p in parts):
            moved = tuple(
                dataclasses.replace(p, video_start=dur + 5, video_end=dur + 9)
                if isinstance(p, VideoPart)
                else p
                for p in parts
            )
            messages[i] = dataclasses.replace(m, content=moved)
            break
    broken = dataclasses.replace(bad, id="crop-past-the-end", messages=tuple(messages))
    write_rows(out / "bad.parquet", [broken, *[r for r in rows if r.id != bad.id]])
    res = runner.invoke(app, ["data", "check", str(out / "bad.parquet"), "--json"])
    assert res.exit_code == 1, res.output
    report = json.loads(res.stdout)
    assert report["file"] == str(out / "bad.parquet") and report["by_rule"] == {"video_window": 1}
    (v,) = report["violations"]
    assert v["row"] == "crop-past-the-end" and "outside the video's [0, " in v["detail"]

    cfg |= {"out_dir": str(tmp_path / "sft2"), "data": str(out / "bad.parquet")}
    (tmp_path / "sft2.yaml").write_text(yaml.safe_dump(cfg))
    res = runner.invoke(app, ["train", "sft", "--config", str(tmp_path / "sft2.yaml")])
    assert res.exit_code == 0, res.output
    errors = json.loads((tmp_path / "sft2" / "data_errors.json").read_text())
    assert [(e["id"], e["cause"]) for e in errors["errors"]] == [
        ("crop-past-the-end", "video_window")
    ]
