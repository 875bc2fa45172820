"""The fan-out's contract without a model: each tracker gets exactly the steps its store lacks
(a resume re-sends the missing ones in order), every tracker call is bounded by
``logging.tracker_timeout_s`` (fail: one line; warn: the run goes on without it), a bad
tracking.json is one warning and fresh runs, a bad MLflow URI is one line at config time, and a
dead MLflow server fails within the deadline through the real command line."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from paravt.config.tracking import LoggingConfig
from paravt.errors import TrackerError
from paravt.tracking import Trackers, TrackingSettings, read_state


class _Recorder:
    """A tracker adapter that records what reaches it; ``delay_s`` makes each log slow."""

    def __init__(self, name: str, held: set[int] = frozenset(), delay_s: float = 0.0) -> None:
        self.name, self.held, self.delay_s = name, set(held), delay_s
        self.state: dict[str, Any] = {"id": name}
        self.steps: list[int] = []
        self.closed: list[str] = []

    def log(self, step: int, metrics: Any, rollouts: Any) -> None:
        time.sleep(self.delay_s)
        self.steps.append(step)

    def close(self, status: str = "FINISHED") -> None:
        self.closed.append(status)


def _settings(errors: str = "fail", timeout_s: float = 0.5) -> TrackingSettings:
    return TrackingSettings((), timeout_s=timeout_s, errors=errors)


def test_each_tracker_gets_back_exactly_the_steps_it_lacks(tmp_path: Path) -> None:
    """wandb-like lost its buffered steps 2-3, mlflow-like holds 1-3 (checkpoint 2, killed after
    3): the backfill re-sends 2 to the first only, the re-run step 3 goes to the first only."""
    a, b = _Recorder("a", {1}), _Recorder("b", {1, 2, 3})
    t = Trackers([a, b], tmp_path, _settings())
    rows = {1: {"loss": 1.0}, 2: {"loss": 2.0}}
    assert t.backfill(rows, {}) == [2]
    for step in (3, 4):
        t.log(step, {"loss": float(step)})
    t.close()
    assert a.steps == [2, 3, 4] and b.steps == [4]
    assert a.closed == b.closed == ["FINISHED"]
    state = read_state(tmp_path)
    assert state["a"]["logged_through"] == state["b"]["logged_through"] == 4


def test_a_slow_tracker_fails_within_the_deadline_in_one_line(tmp_path: Path) -> None:
    slow = _Recorder("slow", delay_s=30)
    t = Trackers([slow], tmp_path, _settings("fail", 0.3))
    t0 = time.monotonic()
    with pytest.raises(TrackerError) as err:
        t.log(1, {"loss": 1.0})
    assert time.monotonic() - t0 < 5
    msg = str(err.value)
    assert "\n" not in msg and "slow (step 1)" in msg and "tracker_timeout_s" in msg
    t.close("FAILED")  # the failed tracker was dropped: closing never waits on it again
    assert slow.closed == [] and slow.held == set()


def test_warn_goes_on_without_the_failing_tracker(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    slow, ok = _Recorder("slow", delay_s=30), _Recorder("ok")
    t = Trackers([slow, ok], tmp_path, _settings("warn", 0.3))
    with caplog.at_level(logging.WARNING):
        for step in (1, 2):
            t.log(step, {"loss": 1.0})
    t.close()
    assert ok.steps == [1, 2] and slow.steps == [] and ok.closed == ["FINISHED"]
    assert read_state(tmp_path)["slow"] == {"id": "slow", "logged_through": 0}  # kept for a resume
    (warning,) = [r.getMessage() for r in caplog.records if "slow" in r.getMessage()]
    assert "goes on without slow" in warning


@pytest.mark.parametrize(
    "text",
    [
        '{"logged_through": "two"}',
        '{"mlflow": "oops"}',
        '{"wandb": {"id": 3}}',
        "[1, 2]",
        "{torn",
    ],
)
def test_a_bad_tracking_json_is_one_warning_and_fresh_runs(
    tmp_path: Path, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "tracking.json").write_text(text)
    with caplog.at_level(logging.WARNING):
        assert read_state(tmp_path) == {}
    (msg,) = [r.getMessage() for r in caplog.records]
    assert "tracking.json is ignored" in msg and "fresh runs" in msg and "\n" not in msg


@pytest.mark.parametrize("uri", ["nonsense://x", "ftp://host/db"])
def test_an_unknown_mlflow_uri_scheme_is_refused_naming_the_known_ones(uri: str) -> None:
    with pytest.raises(ValidationError) as err:
        LoggingConfig(mlflow_tracking_uri=uri)
    assert "http://" in str(err.value) and "sqlite://" in str(err.value)
    for ok in ("http://127.0.0.1:5000", "sqlite:////tmp/x.db", "postgresql+psycopg2://h/db"):
        LoggingConfig(mlflow_tracking_uri=ok)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens


def test_a_dead_mlflow_server_fails_within_the_deadline_through_the_cli(tmp_path: Path) -> None:
    """The real `paravt train sft` with MLflow at a closed loopback port and a 2 s deadline: one
    line naming MLflow and the deadline, exit 2, long before MLflow's own minutes of retries; the
    trackers start before a model loads (the model here does not even exist)."""
    pytest.importorskip("mlflow")
    from paravt.data.rows import ExtraInfo, Message, SFTRow
    from paravt.data.schema import write_rows

    extra = ExtraInfo(
        id="v1", task="mcq", question="Which?", answer="B", duration=8.0, options=("A. x", "B. y")
    )
    turns = (Message("user", "Which?"), Message("assistant", "<answer>B</answer>"))
    write_rows(tmp_path / "sft.parquet", [SFTRow("v1", "main", "parallel", turns, (), extra)])
    (tmp_path / "model").mkdir()  # empty: had the model loaded first, the error would be about it
    (tmp_path / "c.yaml").write_text(
        f"data: {tmp_path / 'sft.parquet'}\nout_dir: {tmp_path / 'run'}\n"
        f"model:\n  path: {tmp_path / 'model'}\nlogging:\n  loggers: [console, mlflow]\n"
        f"  mlflow_tracking_uri: http://127.0.0.1:{_closed_port()}\n  tracker_timeout_s: 2\n"
    )
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "paravt", "train", "sft", "--config", str(tmp_path / "c.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - t0
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and "mlflow" in lines[0] and "2 s" in lines[0], proc.stderr
    assert took < 60, took


def test_a_result_run_is_its_metrics_and_tables_logged_once_per_content(
    tmp_path: Path, mlflow_store: Any
) -> None:
    """An eval's or the repro summary's run (`log_result_run`): nested numbers flattened to
    metrics, lists as table artifacts; the same content again logs nothing, a changed one is a new
    run."""
    mlflow = pytest.importorskip("mlflow")
    from paravt.tracking.results import keyed_table, log_result_run, records_table

    uri = f"sqlite:///{mlflow_store(tmp_path / 'store' / 'mlflow.db')}"
    s = TrackingSettings(("mlflow",), project="r", group="g", mlflow_tracking_uri=uri)
    metrics = {"parallel": {"acc": 0.5, "n": 2}, "note": "text", "ok": True}
    tables = {
        "claims": records_table([{"claim": "a", "holds": True}, {"claim": "b", "holds": False}]),
        "variants": keyed_table({"sft": {"acc": 0.5}, "grpo": {"acc": 0.75}}, "variant"),
    }
    assert log_result_run(tmp_path / "ev", s, run_name="ev", metrics=metrics, tables=tables)
    assert not log_result_run(tmp_path / "ev", s, run_name="ev", metrics=metrics, tables=tables)
    client = mlflow.MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("r").experiment_id])
    assert run.info.run_name == "ev" and run.data.tags["paravt.group"] == "g"
    assert {k: v for k, v in run.data.metrics.items() if k != "training/global_step"} == {
        "parallel/acc": 0.5,
        "parallel/n": 2.0,
        "ok": 1.0,
    }
    path = client.download_artifacts(run.info.run_id, "variants.json", str(tmp_path / "dl"))
    assert json.loads(Path(path).read_text())["data"] == [["sft", 0.5], ["grpo", 0.75]]
    metrics["parallel"]["acc"] = 1.0
    assert log_result_run(tmp_path / "ev", s, run_name="ev", metrics=metrics, tables=tables)
    assert len(client.search_runs([client.get_experiment_by_name("r").experiment_id])) == 2
