"""Experiment trackers of the local trainers: ``logging.loggers`` is the ONE logger list (the verl
render passes the same list to verl's ``trainer.logger``); docs/ARCHITECTURE.md, "Experiment
tracking".

- `settings`: `TrackingSettings` (plain values from the ``logging`` section) and `require`, the ONE
  import of an optional tracker package (a missing one is a one-line `ConfigError` naming the extra)
- `state`: ``OUT/tracking.json``, each tracker's run id and the last step it held (checked)
- `stores`: the steps a tracker's own store holds, read back on resume (nothing lost, nothing twice)
- `bounded`: every tracker call under ``logging.tracker_timeout_s``
- `results`: a finished result (an eval, the repro summary) as a tracker run of its own
- `table`: one step's sampled rollouts as a flat table
- `wandb_run`, `mlflow_run`, `tensorboard_run`: one adapter each
- `fanout`: `Trackers`, what the training loop calls, and `attach_report`
"""

from __future__ import annotations

from paravt.tracking.fanout import Trackers, attach_report
from paravt.tracking.settings import EXTRA, PACKAGES, TrackingSettings, require, require_all
from paravt.tracking.state import FILE as STATE_FILE, read_state

__all__ = [
    "EXTRA",
    "PACKAGES",
    "STATE_FILE",
    "Trackers",
    "TrackingSettings",
    "attach_report",
    "read_state",
    "require",
    "require_all",
]
