"""Issue 48 items 9 and 10: a tracker store on a disk it cannot write ends in ONE line naming the
path and the cause, fast.

The disks are real: a tiny tmpfs (full) or a read-only one, mounted in a private mount namespace
(`unshare -rm`: no root needed where user namespaces are on, nothing mounted on the host), for the
real `paravt train sft` command. The trackers start before the model loads, so the model here does
not even exist: what fails is the tracker, or the test fails."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from paravt.config.tracking import LoggingConfig
from paravt.errors import TrackerError
from paravt.tracking import TrackingSettings


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    try:
        probe = "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d && umount $d"
        return subprocess.run(["unshare", "-rm", "sh", "-c", probe], timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


needs_mounts = pytest.mark.skipif(
    not _unshare_works(), reason="no private mount namespace (unshare -rm) on this machine"
)


def _train_sft(
    tmp_path: Path, logging_yaml: str, mount: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    """`paravt train sft` (the model dir is empty) after ``mount`` (shell), in its own mount
    namespace; returns the process and its seconds."""
    from paravt.data.rows import ExtraInfo, Message, SFTRow
    from paravt.data.schema import write_rows

    extra = ExtraInfo(
        id="v1", task="mcq", question="Which?", answer="B", duration=8.0, options=("A. x", "B. y")
    )
    turns = (Message("user", "Which?"), Message("assistant", "<answer>B</answer>"))
    write_rows(tmp_path / "sft.parquet", [SFTRow("v1", "main", "parallel", turns, (), extra)])
    (tmp_path / "model").mkdir()
    (tmp_path / "c.yaml").write_text(
        f"data: {tmp_path / 'sft.parquet'}\nout_dir: {tmp_path / 'run'}\n"
        f"model:\n  path: {tmp_path / 'model'}\nlogging:\n{logging_yaml}"
    )
    cmd = f"{mount} && exec {sys.executable} -m paravt train sft --config {tmp_path / 'c.yaml'}"
    t0 = time.monotonic()
    proc = subprocess.run(
        ["unshare", "-rm", "sh", "-c", cmd], capture_output=True, text=True, timeout=240
    )
    return proc, time.monotonic() - t0


def _paravt_lines(stderr: str) -> list[str]:
    """stderr without wandb's own banner lines (``wandb: ...``)."""
    return [x for x in stderr.strip().splitlines() if not x.startswith("wandb:")]


@needs_mounts
def test_a_read_only_sqlite_store_is_one_line_naming_the_path_fast(tmp_path: Path) -> None:
    pytest.importorskip("mlflow")
    store = tmp_path / "ro"
    store.mkdir()
    proc, took = _train_sft(
        tmp_path,
        f"  loggers: [console, mlflow]\n  mlflow_tracking_uri: sqlite:///{store}/mlflow.db\n",
        f"mount -t tmpfs -o ro,size=64k tmpfs {store}",
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert f"{store} is read-only" in lines[0] and "logging.mlflow_tracking_uri" in lines[0]
    assert took < 30, took  # not MLflow's 35 s of retries


@needs_mounts
def test_wandb_offline_on_a_full_disk_is_one_paravt_line(tmp_path: Path) -> None:
    pytest.importorskip("wandb")
    wandb_dir = tmp_path / "run" / "wandb"
    wandb_dir.mkdir(parents=True)
    proc, _ = _train_sft(
        tmp_path,
        "  loggers: [console, wandb]\n  wandb_mode: offline\n",
        f"mount -t tmpfs -o size=64k tmpfs {wandb_dir}",
    )
    (line,) = _paravt_lines(proc.stderr)
    assert proc.returncode == 2, proc.stderr
    assert f"the disk holding {wandb_dir} is full" in line and "KiB free" in line, line
    assert "Logging error" not in proc.stderr and "Traceback" not in proc.stderr


@needs_mounts
def test_wandb_offline_stops_at_the_step_where_the_disk_fills(tmp_path: Path) -> None:
    """A disk that fills during the run (room for wandb's start, not for the steps): the step
    that finds it full fails in one line; the steps before it were logged."""
    pytest.importorskip("wandb")
    from paravt.tracking.wandb_run import MIN_FREE_BYTES

    run = tmp_path / "run"
    (run / "wandb").mkdir(parents=True)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from paravt.tracking import Trackers, TrackingSettings\n"
        "from paravt.errors import TrackerError\n"
        "s = TrackingSettings(('wandb',), wandb_mode='offline', project='p')\n"
        f"t = Trackers.open(Path({str(run)!r}), s, config={{'a': 1}}, resume=False)\n"
        f"filler = Path({str(run / 'wandb' / 'filler')!r})\n"
        "step = 0\n"
        "try:\n"
        "    for step in range(1, 50):\n"
        "        if step == 3:  # the disk fills between step 2 and step 3\n"
        "            import shutil\n"
        "            free = shutil.disk_usage(filler.parent).free\n"
        "            filler.write_bytes(bytes(free - (1 << 20)))\n"
        "        t.log(step, {'x': float(step)})\n"
        "except TrackerError as err:\n"
        "    print(step, err)\n"
    )
    size = MIN_FREE_BYTES + (2 << 20)
    cmd = f'mount -t tmpfs -o size={size} tmpfs {run / "wandb"} && exec {sys.executable} -c "$0"'
    proc = subprocess.run(
        ["unshare", "-rm", "sh", "-c", cmd, script], capture_output=True, text=True, timeout=240
    )
    out = proc.stdout.strip()
    assert out.startswith("3 wandb (step 3): the disk holding"), (out, proc.stderr)
    assert "Logging error" not in proc.stderr and "Traceback" not in proc.stderr


def test_a_failed_write_of_wandbs_log_file_is_kept_quiet_and_stops_the_next_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """OSError 28 inside wandb's own log handler: no "--- Logging error ---" traceback on stderr
    (Python prints one per failed record: hundreds), and the next step stops with that error."""
    pytest.importorskip("wandb")
    from paravt.tracking.wandb_run import WandbRun

    s = TrackingSettings(("wandb",), wandb_mode="offline", project="p")
    run = WandbRun(tmp_path, s, run_name="r", config=None, prev=None)
    handler = logging.getLogger("wandb").handlers[-1]
    record = logging.LogRecord("wandb", logging.INFO, __file__, 1, "x", None, None)
    for _ in range(3):
        try:
            raise OSError(28, "No space left on device")
        except OSError:
            handler.handleError(record)
    assert "Logging error" not in capsys.readouterr().err
    with pytest.raises(TrackerError, match="is full: writing its log failed .No space left"):
        run.log(1, {"x": 1.0}, ())
    run.close()


@pytest.mark.parametrize("uri", ["file:///tmp/mlruns", "mlruns", "/abs/mlruns", "file:mlruns"])
def test_a_file_store_uri_is_refused_at_load_naming_sqlite(uri: str) -> None:
    """MLflow 3 refuses its plain-file store at run time: refused when the config loads."""
    with pytest.raises(ValidationError, match="sqlite:///"):
        LoggingConfig(mlflow_tracking_uri=uri)


def test_the_sqlite_check_names_a_read_only_file(tmp_path: Path) -> None:
    """The store's file itself read-only (not its directory): named, before MLflow is asked."""
    import os

    from paravt.errors import ConfigError
    from paravt.tracking.mlflow_run import _writable_sqlite

    db = tmp_path / "mlflow.db"
    db.write_bytes(b"")
    _writable_sqlite(f"sqlite:///{db}")  # writable: no error
    if os.geteuid() == 0:
        pytest.skip("root writes a read-only file; the mounted case above covers root")
    db.chmod(0o444)
    with pytest.raises(ConfigError, match=f"the file {db} is read-only"):
        _writable_sqlite(f"sqlite:///{db}")
