"""TensorBoard reads a run's event files in name order and applies a purge only to what it read
before it: a resumed run's new file must sort after every older one, even when opened within the
same second (names then compare host, pid and a counter as text: "…10" < "…9")."""

from __future__ import annotations

import time
from pathlib import Path

from paravt.tracking.settings import TrackingSettings
from paravt.tracking.tensorboard_run import TensorboardRun


def _steps(root: Path, tag: str) -> list[tuple[int, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(root))
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def test_a_rewound_run_reads_back_each_step_once_with_the_rerun_values(tmp_path: Path) -> None:
    s = TrackingSettings(("tensorboard",))
    run = TensorboardRun(tmp_path, s, run_name="r", config=None, prev=None)
    for step in (1, 2, 3, 4):
        run.log(step, {"train/loss": float(step)}, [])
    # an older file of THIS second whose name sorts after any host name: without the wait, the
    # re-run's file would be read first and its purge would void nothing
    (tmp_path / "tb" / f"events.out.tfevents.{int(time.time())}.zzz").write_bytes(b"")
    run.rewind(2)
    for step in (3, 4):
        run.log(step, {"train/loss": 10.0 * step}, [])
    run.close()
    assert _steps(tmp_path / "tb", "train/loss") == [(1, 1.0), (2, 2.0), (3, 30.0), (4, 40.0)]
    names = sorted(p.name for p in (tmp_path / "tb").glob("events.out.tfevents.*"))
    assert not names[-1].endswith(".zzz")  # the re-run's file is read last
