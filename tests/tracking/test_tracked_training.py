"""The local trainers log to wandb (offline) and MLflow (a local store under the run), with no
network: a 2-step SFT and a 1-step PARA-GRPO run write the metric keys, the step numbers and the
rollouts table; a killed and resumed run stays ONE tracker run with no step twice; the report is
attached at the end. Budget: about 30 s on 2 cores (the tiny xs model, 24-token turns)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("wandb")
mlflow = pytest.importorskip("mlflow")

from wandb_records import artifacts, history, offline_runs, run_record  # noqa: E402

from paravt.config import TrainConfig, load  # noqa: E402
from paravt.data.synth.build import build  # noqa: E402
from paravt.jsonl import read_jsonl  # noqa: E402
from paravt.rl.loop import run_training  # noqa: E402
from paravt.tracking import attach_report, read_state  # noqa: E402

TRACKED = {
    "loggers": ["jsonl", "wandb", "mlflow"],
    "wandb_mode": "offline",
    "project": "paravt-test",
    "group": "g1",
}


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = Path(tmp_path_factory.mktemp("synth"))
    build(out, videos=2, eval_videos=0, seed=0, workers=1)
    return out


def _cfg(out: Path, data: Path, model: str, **sections: dict[str, Any]) -> TrainConfig:
    base: dict[str, Any] = {
        "out_dir": str(out),
        "data": str(data),
        "model": {"path": model},
        "logging": TRACKED,
        "video": {
            "overview_nframes": 4,
            "overview_max_pixels": 64 * 64,
            "crop_max_pixels": 64 * 64,
            "crop_max_frames": 2,
        },
        "sampling": {"max_new_tokens": 16, "sub_max_new_tokens": 8},
        "rollout": {"max_turns": 0},
        "sft": {
            "lr": 1e-3,
            "batch_size": 1,
            "warmup_steps": 0,
            "save_every": 100,
            "max_steps": 2,
        },
        "rl": {
            "group_size": 2,
            "prompts_per_step": 1,
            "steps": 1,
            "lr": 1e-5,
            "save_every": 100,
            "drop_zero_variance": False,
            "log_rollouts": 2,
        },
    }
    for name, values in sections.items():
        base[name] = {**base.get(name, {}), **values}
    return TrainConfig.model_validate(base)


def _mlflow(run: Path) -> Any:
    return mlflow.MlflowClient(tracking_uri=f"sqlite:///{run.resolve() / 'mlruns' / 'mlflow.db'}")


def _mlflow_runs(run: Path) -> list[Any]:
    client = _mlflow(run)
    exp = client.get_experiment_by_name("paravt-test")
    return client.search_runs([exp.experiment_id])


def _steps(client: Any, run_id: str, key: str) -> list[int]:
    return sorted(m.step for m in client.get_metric_history(run_id, key))


def test_sft_run_reaches_wandb_and_mlflow_with_its_config(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str, mlflow_store: Callable[[Path], Path]
) -> None:
    mlflow_store(tmp_path / "sft-a" / "mlruns" / "mlflow.db")
    run = run_training(
        _cfg(tmp_path / "sft-a", synth / "sft.parquet", tiny_qwen3_dir), kind="sft", progress=False
    )
    logged = read_jsonl(run / "train_log.jsonl")
    assert [r["step"] for r in logged] == [1, 2]
    # MLflow: one run named after the directory, in the group, with the resolved config as params
    (mr,) = _mlflow_runs(run)
    client = _mlflow(run)
    assert (
        mr.info.run_name == "sft-a"
        and mr.data.tags["paravt.group"] == "g1"
        and mr.info.status == "FINISHED"
    )
    assert (
        mr.data.params["sft.max_steps"] == "2" and mr.data.params["logging.wandb_mode"] == "offline"
    )
    for key in ("train/loss", "train/lr", "timing_s/step"):
        assert _steps(client, mr.info.run_id, key) == [1, 2], key
    assert [
        m.value
        for m in sorted(
            client.get_metric_history(mr.info.run_id, "train/loss"), key=lambda m: m.step
        )
    ] == pytest.approx([r["train/loss"] for r in logged])
    # wandb: one offline run, same id as tracking.json, project / name / group, every step's keys
    (wfile,) = offline_runs(run)
    rec = run_record(wfile)
    assert (rec.run_id, rec.project, rec.display_name, rec.run_group) == (
        read_state(run)["wandb"]["id"],
        "paravt-test",
        "sft-a",
        "g1",
    )
    config = {i.key: json.loads(i.value_json) for i in rec.config.update}
    assert config["sft"]["max_steps"] == 2 and config["logging"]["group"] == "g1"
    rows = history(wfile)
    assert [r["_step"] for r in rows] == [1, 2]
    assert all({"train/loss", "train/lr", "timing_s/step"} <= set(r) for r in rows)
    assert [r["train/loss"] for r in rows] == pytest.approx([r["train/loss"] for r in logged])
    # the report, attached at the end: an MLflow artifact and a wandb artifact of the same run
    report = tmp_path / "report.html"
    report.write_text("<html>report</html>")
    assert sorted(attach_report([run], report)) == sorted(
        [f"wandb:{rec.run_id}", f"mlflow:{mr.info.run_id}"]
    )
    assert "report.html" in [a.path for a in client.list_artifacts(mr.info.run_id)]
    files = offline_runs(run)
    assert len(files) == 2 and run_record(files[1]).run_id == rec.run_id
    assert [t for _, t in artifacts(files[1])] == ["report"]


def test_rl_step_logs_the_rollouts_table(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str, mlflow_store: Callable[[Path], Path]
) -> None:
    mlflow_store(tmp_path / "rl" / "mlruns" / "mlflow.db")
    run = run_training(
        _cfg(tmp_path / "rl", synth / "rl.parquet", tiny_qwen3_dir), kind="rl", progress=False
    )
    sampled = read_jsonl(run / "rollouts.jsonl")
    assert sampled and {r["step"] for r in sampled} == {1}
    # wandb: step 1 holds the metrics and a table whose rows are the sampled rollouts
    (wfile,) = offline_runs(run)
    (row,) = history(wfile)
    assert row["_step"] == 1 and {
        "critic/rewards/mean",
        "acc",
        "actor/loss",
        "f_tau",
        "kappa",
    } <= set(row)
    assert row["rollouts/_type"] == "table-file" and row["rollouts/nrows"] == len(sampled)
    table = json.loads((wfile.parent / "files" / row["rollouts/path"]).read_text())
    cols = table["columns"]
    assert {"completion", "advantage", "reward", "tag/closed_answer", "term/acc"} <= set(cols)
    assert [r[cols.index("completion")] for r in table["data"]] == [
        r["completion"] for r in sampled
    ]
    # MLflow: the same table as an artifact of step 1, the metrics at step 1
    (mr,) = _mlflow_runs(run)
    client = _mlflow(run)
    assert _steps(client, mr.info.run_id, "critic/rewards/mean") == [1]
    path = client.download_artifacts(
        mr.info.run_id, "rollouts/step_000001.json", str(tmp_path / "dl")
    )
    saved = json.loads(Path(path).read_text())
    assert [r[saved["columns"].index("advantage")] for r in saved["data"]] == pytest.approx(
        [r["advantage"] for r in sampled], rel=1e-9
    )  # MLflow's table JSON keeps 10 significant digits


def test_killed_and_resumed_run_is_one_tracker_run_without_a_step_twice(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str, mlflow_store: Callable[[Path], Path]
) -> None:
    mlflow_store(tmp_path / "sft-k" / "mlruns" / "mlflow.db")
    cfg = _cfg(
        tmp_path / "sft-k",
        synth / "sft.parquet",
        tiny_qwen3_dir,
        sft={"max_steps": 4, "save_every": 2},
    )
    run_training(
        cfg, kind="sft", progress=False, stop_after=3
    )  # dies after step 3, its checkpoint is step 2
    run = run_training(cfg, kind="sft", progress=False, resume=True)  # re-runs step 3, then 4
    assert [r["step"] for r in read_jsonl(run / "train_log.jsonl")] == [1, 2, 3, 4]
    (mr,) = _mlflow_runs(run)  # ONE MLflow run
    assert _steps(_mlflow(run), mr.info.run_id, "train/loss") == [1, 2, 3, 4]
    files = offline_runs(run)  # one offline directory per process, all the SAME wandb run
    assert len(files) == 2 and {run_record(f).run_id for f in files} == {
        read_state(run)["wandb"]["id"]
    }
    steps = [r["_step"] for f in files for r in history(f)]
    assert steps == [1, 2, 3, 4]
    # every saved model directory carries its settings and a model card
    ckpt, final = run / "checkpoints" / "step_000002" / "model", run / "model"
    for d, step in ((ckpt, 2), (final, 4)):
        assert load(d / "paravt_config.yaml", TrainConfig).sft.max_steps == 4
        card = (d / "README.md").read_text()
        assert f"step {step}" in card and tiny_qwen3_dir in card and str(cfg.data) in card
        assert (
            "| train/loss |" in card and "- command: `" in card and "`sft.max_steps`: `4`" in card
        )
        assert yaml.safe_load(card.split("---")[1])["base_model"] == tiny_qwen3_dir  # the Hub's key
