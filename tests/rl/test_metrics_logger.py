"""The local trainer's metrics logger: JSONL always, TensorBoard only when ``logging.loggers`` lists
it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from paravt.rl.logger import MetricsLogger
from paravt.tracking import TrackingSettings


def test_no_tensorboard_dir_unless_it_is_a_logger(tmp_path: Path) -> None:
    logger = MetricsLogger(tmp_path, name="r", kind="sft", config={})
    logger.log(1, {"loss": 0.5})
    logger.close()
    assert (tmp_path / "train_log.jsonl").read_text().count("\n") == 1
    assert not (tmp_path / "tb").exists()


@pytest.mark.skipif(
    importlib.util.find_spec("tensorboard") is None, reason="tensorboard not installed"
)
def test_tensorboard_events_when_asked(tmp_path: Path) -> None:
    logger = MetricsLogger(
        tmp_path,
        name="r",
        kind="sft",
        config={},
        tracking=TrackingSettings(("console", "tensorboard")),
    )
    logger.log(1, {"loss": 0.5})
    logger.close()
    events = list((tmp_path / "tb").glob("events.out.tfevents.*"))
    assert len(events) == 1 and events[0].stat().st_size > 0
