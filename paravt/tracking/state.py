"""``OUT/tracking.json``: what a resumed run needs to continue its tracker runs (each tracker's
run id and settings) and ``logged_through``, the last step the trackers already hold (a resumed run
re-runs the steps after its checkpoint; the trackers do not get them twice)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

FILE = "tracking.json"


def read_state(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir) / FILE
    if not path.exists():
        return {}
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        # torn by a kill mid-write (writes are atomic, so only a hand-edited file): fresh runs
        return {}
    return state if isinstance(state, dict) else {}


def write_state(run_dir: str | Path, state: dict[str, Any]) -> None:
    """Atomic (write, then rename): a kill leaves the old file or the new one."""
    path = Path(run_dir) / FILE
    tmp = path.with_name(f".{FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
    os.replace(tmp, path)
