"""Issue 48 item 12: a tracker's failure line advises what the user can still change. Under
``logging.tracker_errors: fail`` it names ``warn`` as the way to train on; under ``warn`` (already
set) the warning does not advise setting it, and a tracker that fails to end its run never does."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest

from paravt.errors import TrackerError
from paravt.tracking import Trackers, TrackingSettings


class _Slow:
    name = "slow"

    def __init__(self) -> None:
        self.held: set[int] = set()
        self.state: dict[str, Any] = {"id": "slow"}

    def log(self, step: int, metrics: Any, rollouts: Any) -> None:
        time.sleep(30)

    def close(self, status: str = "FINISHED") -> None:
        time.sleep(30)


def test_fail_mode_names_warn_as_the_way_on(tmp_path: Path) -> None:
    t = Trackers([_Slow()], tmp_path, TrackingSettings((), timeout_s=0.2, errors="fail"))
    with pytest.raises(TrackerError) as err:
        t.log(1, {"loss": 1.0})
    assert "logging.tracker_errors=warn" in str(err.value)


def test_warn_mode_does_not_advise_setting_warn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    t = Trackers([_Slow()], tmp_path, TrackingSettings((), timeout_s=0.2, errors="warn"))
    with caplog.at_level(logging.WARNING):
        t.log(1, {"loss": 1.0})
    (line,) = [r.getMessage() for r in caplog.records if "slow" in r.getMessage()]
    assert "goes on without slow" in line and "set logging.tracker_errors" not in line
    assert "check the tracker's address" in line


def test_a_tracker_that_cannot_end_its_run_is_not_told_to_set_warn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    slow = _Slow()
    t = Trackers([slow], tmp_path, TrackingSettings((), timeout_s=0.2, errors="fail"))
    t.runs = [slow]  # type: ignore[list-item]
    with caplog.at_level(logging.WARNING):
        t.close()
    (line,) = [r.getMessage() for r in caplog.records if "slow" in r.getMessage()]
    assert "ending its run" in line and "tracker_errors" not in line
