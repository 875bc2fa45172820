"""``OUT/tracking.json``: what a resumed run needs to continue its tracker runs (each tracker's
run id and settings, and ``logged_through``, the last step it held when last written).

The file is checked when read: one that is torn, hand-edited or of the wrong shape is named in ONE
warning and ignored (the resumed run starts fresh tracker runs; ``train_log.jsonl`` is untouched),
never a traceback."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

FILE = "tracking.json"
#: The id field of each tracker's entry (TensorBoard keeps no id: its run is ``OUT/tb``).
ID_FIELDS = {
    "wandb": ("id", "project", "mode", "dir"),
    "mlflow": ("run_id", "tracking_uri"),
    "tensorboard": (),
}

log = logging.getLogger(__name__)


def read_state(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir) / FILE
    if not path.exists():
        return {}
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        why = problem(state)
    except (OSError, ValueError, UnicodeDecodeError) as err:
        why = f"unreadable ({type(err).__name__})"
    if why:
        log.warning("%s is ignored: %s; the trackers start fresh runs", path, why)
        return {}
    return dict(state)


def problem(state: Any) -> str | None:
    """What is wrong with a parsed tracking.json, or None."""
    if not isinstance(state, dict):
        return f"a JSON object is expected, not {type(state).__name__}"
    for key, value in state.items():
        if key == "logged_through":
            if not _count(value):
                return f"logged_through must be a step number >= 0, not {value!r}"
        elif key in ID_FIELDS:
            if not isinstance(value, dict):
                return f"{key} must be an object, not {value!r}"[:200]
            for f in ID_FIELDS[key]:
                if not isinstance(value.get(f), str) or not value[f]:
                    return f"{key}.{f} must be a non-empty string, not {value.get(f)!r}"[:200]
            if "logged_through" in value and not _count(value["logged_through"]):
                return f"{key}.logged_through must be a step number >= 0"
    return None


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def write_state(run_dir: str | Path, state: dict[str, Any]) -> None:
    """Atomic (write, then rename): a kill leaves the old file or the new one."""
    path = Path(run_dir) / FILE
    tmp = path.with_name(f".{FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
    os.replace(tmp, path)
