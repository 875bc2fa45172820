"""The tracker fan-out without a model: a missing package is one line naming the extra (and the
CLI says it before a model loads), a tracker is imported only when listed, a resumed run skips
the steps its trackers hold, the rollouts table is flat, the ``logging`` section is the ONE logger
list (the verl render reads it; the old ``verl.loggers`` is refused naming its new home)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from paravt.config import TrainConfig, load
from paravt.errors import ConfigError, ParavtError
from paravt.integrations.verl.render import render_verl_config, tracker_env
from paravt.rl.logger import MetricsLogger
from paravt.tracking import PACKAGES, Trackers, TrackingSettings, read_state, require, require_all
from paravt.tracking.table import rollout_table


@pytest.mark.parametrize("logger", sorted(PACKAGES))
def test_missing_tracker_package_is_one_line_naming_the_extra(
    logger: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, PACKAGES[logger], None)  # `import` raises ImportError
    with pytest.raises(ConfigError) as err:
        require_all(["console", "jsonl", logger])
    msg = str(err.value)
    assert (
        "\n" not in msg and f"lists {logger!r}" in msg and "pip install 'paravt[tracking]'" in msg
    )


def test_a_tracker_is_imported_only_when_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in PACKAGES.values():
        monkeypatch.setitem(sys.modules, module, None)
    logger = MetricsLogger(
        tmp_path, name="r", kind="sft", config={}, tracking=TrackingSettings(("console", "jsonl"))
    )
    logger.log(1, {"loss": 0.5})
    logger.close()
    assert not (tmp_path / "tracking.json").exists() and not (tmp_path / "wandb").exists()


def test_cli_names_the_missing_tracker_before_a_model_loads(tmp_path: Path) -> None:
    """The real command line in a subprocess, with ``mlflow`` made unimportable; the model path
    does not exist, so had the model been loaded first the error would be about it."""
    from paravt.data.rows import ExtraInfo, Message, SFTRow
    from paravt.data.schema import write_rows

    extra = ExtraInfo(
        id="v1", task="mcq", question="Which?", answer="B", duration=8.0, options=("A. x", "B. y")
    )
    write_rows(
        tmp_path / "sft.parquet",
        [
            SFTRow(
                "v1",
                "main",
                "parallel",
                (Message("user", "Which?"), Message("assistant", "<answer>B</answer>")),
                (),
                extra,
            )
        ],
    )
    (tmp_path / "model").mkdir()
    (tmp_path / "c.yaml").write_text(
        f"data: {tmp_path / 'sft.parquet'}\nout_dir: {tmp_path / 'run'}\n"
        f"model:\n  path: {tmp_path / 'model'}\nlogging:\n  loggers: [console, mlflow]\n"
    )
    code = (
        "import sys; sys.modules['mlflow'] = None; sys.argv = ['paravt'] + sys.argv[1:]; "
        "from paravt.cli import main; main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "train", "sft", "--config", str(tmp_path / "c.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and "mlflow" in lines[0] and "paravt[tracking]" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_fresh_run_keeps_no_stale_tracker_ids(tmp_path: Path) -> None:
    (tmp_path / "tracking.json").write_text('{"logged_through": 3}')
    Trackers.open(tmp_path, TrackingSettings(()), config=None, resume=False).close()
    assert not (tmp_path / "tracking.json").exists()


def test_rollouts_table_is_flat_with_a_column_per_term_and_tag() -> None:
    rows = [
        {
            "step": 2,
            "picked": "random",
            "completion": "<think>x</think>",
            "reward": 0.5,
            "advantage": -1.0,
            "terms": {"acc": 1.0, "format": 0.0},
            "tags": {"closed_answer": False, "n_calls": 2},
            "episode_id": "s1-e0",
            "group": "0:v1",
            "calls": [
                {"turn": 1, "name": "crop_video", "window": [2.0, 4.5], "ok": True, "summary": "a"},
                {
                    "turn": 1,
                    "name": "crop_video",
                    "window": [None, None],
                    "ok": False,
                    "error": "x",
                },
            ],
        },
        {
            "step": 2,
            "picked": "tool_code",
            "completion": "y",
            "reward": float("nan"),
            "advantage": None,
            "terms": {"acc": 0.0, "tool": 0.2},
            "tags": {"closed_answer": True, "n_calls": 0},
        },
    ]
    cols, data = rollout_table(rows)
    assert cols[-4:] == ["term/acc", "term/format", "term/tool", "tag/closed_answer"]
    first, second = (dict(zip(cols, r, strict=True)) for r in data)
    assert (first["completion"], first["advantage"], first["n_calls"], first["term/tool"]) == (
        "<think>x</think>",
        -1.0,
        2,
        None,
    )
    assert (
        second["reward"] is None
        and second["tag/closed_answer"] is True
        and second["term/format"] is None
    )
    assert (first["episode_id"], first["group"]) == ("s1-e0", "0:v1")
    assert first["calls"] == "1.crop_video[2.0-4.5] ok: a\n1.crop_video error: x"
    assert second["calls"] is None


def test_mlflow_run_continues_by_its_id_and_keeps_one_run(
    tmp_path: Path, mlflow_store: Callable[[Path], Path]
) -> None:
    mlflow = pytest.importorskip("mlflow")
    mlflow_store(tmp_path / "mlruns" / "mlflow.db")
    s = TrackingSettings(("mlflow",), project="p")
    t = Trackers.open(tmp_path, s, config={"rl": {"lr": 1e-5}}, resume=False)
    t.log(1, {"loss": 2.0, "skip": "text", "bad": float("inf")})
    t.close("FAILED")
    run_id = read_state(tmp_path)["mlflow"]["run_id"]
    t = Trackers.open(tmp_path, s, config={"rl": {"lr": 1e-5}}, resume=True)
    t.log(1, {"loss": 9.0})  # held by the store: not sent again
    t.log(2, {"loss": 1.0})
    t.close()
    client = mlflow.MlflowClient(read_state(tmp_path)["mlflow"]["tracking_uri"])
    (run,) = client.search_runs([client.get_experiment_by_name("p").experiment_id])
    assert (
        run.info.run_id == run_id
        and run.info.status == "FINISHED"
        and run.data.params["rl.lr"] == "1e-05"
    )
    assert sorted((m.step, m.value) for m in client.get_metric_history(run_id, "loss")) == [
        (1, 2.0),
        (2, 1.0),
    ]
    assert set(run.data.metrics) == {"loss", "training/global_step"}


def test_logger_list_is_one_field_for_both_trainers(tmp_path: Path) -> None:
    cfg = TrainConfig(out_dir=str(tmp_path / "run"))
    cfg.logging.loggers = ["console", "wandb", "mlflow", "wandb"]
    cfg.logging.wandb_mode, cfg.logging.group = "offline", "g"
    assert cfg.logging.loggers == ["console", "wandb", "mlflow"]
    trainer = render_verl_config(cfg, run_dir=tmp_path / "run" / "verl")["trainer"]
    assert trainer["logger"] == ["console", "wandb", "mlflow", "file"]
    assert (trainer["project_name"], trainer["experiment_name"]) == ("paravt", "run")
    env = tracker_env(cfg, tmp_path / "run" / "verl")
    assert env["WANDB_MODE"] == "offline" and env["WANDB_RUN_GROUP"] == "g"
    assert env["MLFLOW_TRACKING_URI"].startswith("sqlite:///") and "TENSORBOARD_DIR" not in env
    (tmp_path / "old.yaml").write_text("verl:\n  loggers: [wandb]\n")
    with pytest.raises(ConfigError, match=r"verl\.loggers is now logging\.loggers"):
        load(tmp_path / "old.yaml")
    (tmp_path / "bad.yaml").write_text("logging:\n  loggers: [neptune]\n")
    with pytest.raises(ConfigError, match="logging.loggers"):
        load(tmp_path / "bad.yaml")


def test_require_returns_the_module_when_installed() -> None:
    pytest.importorskip("wandb")
    assert require("wandb").__name__ == "wandb"


def test_wandb_that_cannot_start_is_one_line_with_the_offline_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wandb = pytest.importorskip("wandb")

    def no_login(**kwargs):
        raise wandb.errors.UsageError(
            "api_key not configured (no-tty). call wandb.login(key=[your_api_key])\nmore"
        )

    monkeypatch.setattr(wandb, "init", no_login)
    with pytest.raises(ParavtError) as err:
        Trackers.open(tmp_path, TrackingSettings(("wandb",)), config={}, resume=False)
    msg = str(err.value)
    assert (
        "\n" not in msg and "api_key not configured" in msg and "logging.wandb_mode=offline" in msg
    )
    assert not (tmp_path / "tracking.json").exists()
