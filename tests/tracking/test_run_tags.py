"""Issue 49 item 2: every tracker run says what it is (kind, variant, seed, commit) and an eval
nests under the training run it evaluates; read back with MlflowClient and from the wandb run
file."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from paravt.tracking import Trackers, TrackingSettings, read_state
from paravt.tracking.results import log_result_run
from paravt.tracking.tags import git_commit, run_tags

mlflow = pytest.importorskip("mlflow")


def _head() -> str | None:
    out = subprocess.run(
        ["git", "-C", str(Path(__file__).parent), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip() if out.returncode == 0 else None


def test_run_tags_name_kind_variant_seed_and_the_checkout_commit() -> None:
    assert git_commit() == _head()
    tags = dict(run_tags("rl", variant="paragrpo", seed=2))
    assert (tags["kind"], tags["variant"], tags["seed"]) == ("rl", "paragrpo", "2")
    assert dict(run_tags("summary")).keys() <= {"kind", "commit"}
    with pytest.raises(ValueError, match="not one of base, sft, rl, eval, summary"):
        run_tags("prior")  # a trainer's name, not a run kind: `OF_TRAINER` maps it to base


def test_an_eval_run_is_tagged_and_nested_under_its_training_run(
    tmp_path: Path, mlflow_store: Any
) -> None:
    uri = f"sqlite:///{mlflow_store(tmp_path / 'store' / 'mlflow.db')}"
    s = TrackingSettings(("mlflow",), project="p", group="g", mlflow_tracking_uri=uri)
    s = replace(s, variant="paragrpo")
    (tmp_path / "seed0").mkdir()
    train = Trackers.open(tmp_path / "seed0", s.tagged("rl", seed=0), config=None, resume=False)
    train.log(1, {"actor/loss": 1.0})
    train.close()
    parent = read_state(tmp_path / "seed0")["mlflow"]["run_id"]
    assert log_result_run(
        tmp_path / "seed0" / "eval_n4",
        s.tagged("eval", seed=0, parent_run_id=parent),
        run_name="paragrpo/seed0/eval_n4",
        metrics={"acc": 0.5},
    )
    client = mlflow.MlflowClient(uri)
    exp = client.get_experiment_by_name("p").experiment_id
    (child,) = client.search_runs([exp], filter_string=f"tags.mlflow.parentRunId = '{parent}'")
    assert child.info.run_name == "paragrpo/seed0/eval_n4"
    for run, kind in ((client.get_run(parent), "rl"), (child, "eval")):
        t = run.data.tags
        assert (t["paravt.kind"], t["paravt.variant"], t["paravt.seed"]) == (kind, "paragrpo", "0")
        assert t["paravt.group"] == "g" and t.get("mlflow.source.git.commit") == _head()
    assert "mlflow.parentRunId" not in client.get_run(parent).data.tags


def test_wandb_gets_the_kind_as_job_type_and_the_rest_as_tags(tmp_path: Path) -> None:
    pytest.importorskip("wandb")
    from wandb_records import offline_runs, run_record

    s = replace(
        TrackingSettings(("wandb",), wandb_mode="offline", project="p"), variant="sft_strong"
    )
    t = Trackers.open(tmp_path, s.tagged("sft", seed=1), config=None, resume=False)
    t.log(1, {"train/loss": 1.0})
    t.close()
    rec = run_record(offline_runs(tmp_path)[0])
    assert rec.job_type == "sft"
    assert {"variant:sft_strong", "seed:1"} <= set(rec.tags)
    head = _head()
    assert head is None or f"commit:{head}" in rec.tags
