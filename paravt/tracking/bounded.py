"""Every tracker call under a deadline (``logging.tracker_timeout_s``): a dead or slow tracking
server costs at most that long, never MLflow's or wandb's minutes of retries.

The call runs in a daemon thread; past the deadline the caller gets a `TrackerError` and the
thread is left behind (a daemon: it never holds the process's exit). Any exception of the call
becomes a `TrackerError` too, in one line naming the tracker, what it was doing and why."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from paravt.errors import ParavtError, TrackerError

T = TypeVar("T")


def bounded(fn: Callable[[], T], *, timeout_s: float, what: str) -> T:
    """``fn()``, or `TrackerError` ("``what``: ...") when it raises or passes ``timeout_s``."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - re-raised below as one line
            box["error"] = err

    t = threading.Thread(target=target, name=f"paravt-tracker: {what}", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        raise TrackerError(
            f"{what}: no answer within {timeout_s:g} s (logging.tracker_timeout_s); check the "
            "tracker's address"
        )
    err = box.get("error")
    if isinstance(err, ParavtError):
        raise TrackerError(f"{what}: {err}") from None
    if isinstance(err, BaseException):
        why = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
        raise TrackerError(f"{what}: {type(err).__name__}: {why}") from None
    return box["value"]  # type: ignore[return-value]
