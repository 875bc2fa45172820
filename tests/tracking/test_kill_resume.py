"""Nothing lost, nothing twice: a micro `train sft` (the xs model, 4 steps, a checkpoint at step 2)
with TensorBoard, wandb (offline) and MLflow is stopped once step 3 is in ``train_log.jsonl`` -
by kill -9 of the real command's process group, or by SIGTERM / SIGINT (in this process: the
handlers are the same) - or by SIGTERM while step 3 computes, then resumed; each tracker, read
back with its own reader (MlflowClient, TensorBoard's EventAccumulator, the wandb run files),
holds every step 1-4 exactly once, in ONE run, with train_log.jsonl's values: step 3, which the
stopped run had logged and the resume re-ran, holds the re-run's timing and throughput in every
tracker. SIGTERM and SIGINT end the MLflow run KILLED before the resume, never RUNNING."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("wandb")
pytest.importorskip("tensorboard")
mlflow = pytest.importorskip("mlflow")

from test_tracked_training import _cfg  # noqa: E402
from wandb_records import history, offline_runs, run_record, run_records, settled  # noqa: E402

from paravt.config import TrainConfig, save  # noqa: E402
from paravt.data.synth.build import build  # noqa: E402
from paravt.errors import Interrupted  # noqa: E402
from paravt.jsonl import read_jsonl  # noqa: E402
from paravt.rl.loop import run_training  # noqa: E402
from paravt.tracking import read_state  # noqa: E402


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = Path(tmp_path_factory.mktemp("synth"))
    build(out, videos=2, eval_videos=0, seed=0, workers=1)
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, mlflow_store: Callable[[Path], Path]) -> str:
    """One MLflow database for the cases, an experiment each."""
    return f"sqlite:///{mlflow_store(tmp_path_factory.mktemp('mlflow') / 'mlflow.db')}"


def _logged(log: Path, step: int) -> bool:
    return log.exists() and len(read_jsonl(log)) >= step


def _killed_by_sigkill(config: Path, log: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "paravt", "train", "sft", "--config", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group (wandb's service starts its own session
        # and exits once it sees its parent gone: the test waits for it, `settled`)
    )
    deadline = time.monotonic() + 240
    while not _logged(log, 3):
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "the run never logged step 3"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def _stopped_by_signal(cfg: TrainConfig, log: Path, signum: int) -> None:
    """Train here; a watcher sends ``signum`` to this process once step 3 is logged."""

    def watch() -> None:
        while not _logged(log, 3):
            time.sleep(0.02)
        os.kill(os.getpid(), signum)

    # Python's own SIGINT handler, whatever an earlier test or library left installed (a
    # suite-wide run had one that swallowed the signal)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=watch, daemon=True).start()
    try:
        with pytest.raises(Interrupted if signum == signal.SIGTERM else KeyboardInterrupt):
            run_training(cfg, kind="sft", progress=False)
            time.sleep(30)  # finished before the signal came: it still arrives, the test is valid
    finally:
        signal.signal(signal.SIGINT, previous)


def _stopped_mid_step(cfg: TrainConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM while step 3 computes (its first line runs the signal): steps 1-2 are logged,
    step 3 never is."""
    from paravt.rl.sft import SFTTrainer

    step = SFTTrainer.step

    def signalled(self: SFTTrainer, i: int) -> dict[str, float]:
        if i == 2:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)  # the handler raises in here
        return step(self, i)

    monkeypatch.setattr(SFTTrainer, "step", signalled)
    with pytest.raises(Interrupted):
        run_training(cfg, kind="sft", progress=False)
    monkeypatch.setattr(SFTTrainer, "step", step)


def _mlflow(cfg: TrainConfig) -> tuple[Any, list[int], list[int]]:
    client = mlflow.MlflowClient(cfg.logging.mlflow_tracking_uri)
    (mr,) = client.search_runs([client.get_experiment_by_name(cfg.logging.project).experiment_id])
    steps = [
        sorted(m.step for m in client.get_metric_history(mr.info.run_id, key))
        for key in ("train/loss", "training/global_step")
    ]
    return mr, steps[0], steps[1]


def _tensorboard_steps(run: Path, tag: str) -> list[int]:
    return [step for step, _ in _tensorboard(run, tag)]


def _tensorboard(run: Path, tag: str) -> list[tuple[int, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run / "tb"))
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


#: The values a re-run step recomputes differently from the killed attempt's (issue 49 item 4).
RERUN = ("timing_s/step", "perf/time_per_step", "perf/throughput", "train/loss")


def _same_values_as_the_log(cfg: TrainConfig, run: Path, wandb_files: list[Path]) -> None:
    """Every tracker holds train_log.jsonl's values of ``RERUN`` at every step: the re-run
    step's replaced the killed attempt's."""
    logged = {r["step"]: r for r in read_jsonl(run / "train_log.jsonl")}
    want = {k: [(s, pytest.approx(logged[s][k], rel=1e-6)) for s in sorted(logged)] for k in RERUN}
    client = mlflow.MlflowClient(cfg.logging.mlflow_tracking_uri)
    (mr,) = client.search_runs([client.get_experiment_by_name(cfg.logging.project).experiment_id])
    rows = sorted((r for f in wandb_files for r in history(f)), key=lambda r: r["_step"])
    for k in RERUN:
        got = sorted((m.step, m.value) for m in client.get_metric_history(mr.info.run_id, k))
        assert got == want[k], ("mlflow", k)
        assert _tensorboard(run, k) == want[k], ("tensorboard", k)
        assert [(r["_step"], r[k]) for r in rows] == want[k], ("wandb", k)
    assert mr.data.metrics["timing_s/step"] == pytest.approx(logged[4]["timing_s/step"])


@pytest.mark.parametrize("how", ["kill9", "sigterm", "sigint", "sigterm_mid_step"])
def test_every_tracker_holds_every_step_once_after_a_stop_and_resume(
    tmp_path: Path,
    synth: Path,
    tiny_qwen3_dir: str,
    store: str,
    how: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run, log = tmp_path / "run", tmp_path / "run" / "train_log.jsonl"
    logging = {
        "loggers": ["jsonl", "tensorboard", "wandb", "mlflow"],
        "wandb_mode": "offline",
        "project": f"kill-{how}",
        "mlflow_tracking_uri": store,
    }
    sft = {"max_steps": 4, "save_every": 2}
    cfg = _cfg(run, synth / "sft.parquet", tiny_qwen3_dir, sft=sft, logging=logging)
    if how == "kill9":
        save(cfg, tmp_path / "c.yaml")
        _killed_by_sigkill(tmp_path / "c.yaml", log)
    else:
        if how == "sigterm_mid_step":
            _stopped_mid_step(cfg, monkeypatch)
            assert [r["step"] for r in read_jsonl(log)] == [1, 2]
        else:
            _stopped_by_signal(cfg, log, signal.SIGTERM if how == "sigterm" else signal.SIGINT)
        mr, loss, _ = _mlflow(cfg)  # flushed and ended on the signal: KILLED, not RUNNING
        assert mr.info.status == "KILLED" and loss == list(range(1, len(loss) + 1)), loss
    for f in offline_runs(run):  # the stopped run's service has closed its file (a resume reads it)
        settled(f)
    run_training(cfg, kind="sft", progress=False, resume=True)
    assert [r["step"] for r in read_jsonl(log)] == [1, 2, 3, 4]
    mr, loss, marks = _mlflow(cfg)  # ONE MLflow run, every step once
    assert mr.info.status == "FINISHED" and loss == marks == [1, 2, 3, 4]
    files = offline_runs(run)  # one offline directory per process, all the SAME wandb run
    # a kill -9 can land before wandb's writer put anything in the first process's file (a busy
    # machine): such a file holds no run record and no step, and the resume re-sends its steps
    empty = [f for f in files if not any(True for _ in run_records(f))]
    assert all(not history(f) for f in empty) and len(empty) < len(files)
    files = [f for f in files if f not in empty]
    assert {run_record(f).run_id for f in files} == {read_state(run)["wandb"]["id"]}
    assert sorted(r["_step"] for f in files for r in history(f)) == [1, 2, 3, 4]
    assert _tensorboard_steps(run, "train/loss") == [1, 2, 3, 4]
    _same_values_as_the_log(cfg, run, files)
