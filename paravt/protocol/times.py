"""Time values in tool calls and answers: seconds, ``MM:SS``, ``HH:MM:SS``
(docs/ARCHITECTURE.md §2).

Accepted forms of one time value (``parse_time``):

- a number (int or float, not bool): seconds; must be finite;
- a string holding a number with an optional unit: ``"80"``, ``"80.5"``, ``"80s"``, ``"80 sec"``,
  ``"80 seconds"``;
- a clock: ``"MM:SS"`` (minutes unbounded, seconds < 60, e.g. ``"1:20"`` = 80) or ``"HH:MM:SS"``
  (minutes and seconds < 60), each optionally with a fraction on the seconds (``"1:20.5"``).

Negative numbers parse (a window is clamped to the video later); anything else raises
``ToolCallError``, which the parser records as the call's error (model output never raises).
"""

from __future__ import annotations

import math
import re

from paravt.errors import ToolCallError

_UNIT = re.compile(r"\s*(?:s|sec|secs|second|seconds)\.?$")
_NUMBER = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$")
#: The leading field holds at most 12 digits: Python refuses to read an integer of over 4,300 digits
#: (a ValueError, not a time error), and no video lasts 10^12 minutes.
_CLOCK = re.compile(r"^([0-9]{1,12}):([0-9]{1,2})(?::([0-9]{1,2}))?(\.[0-9]+)?$")

#: A time token inside free text (answers): a clock or a plain number, digits ASCII only.
TIME_TOKEN = re.compile(r"[0-9]+(?::[0-9]{1,2}){1,2}(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?|\.[0-9]+")

_HINT = "use seconds (80, 80.5, '80s', '80 seconds') or 'MM:SS' / 'HH:MM:SS'"


def parse_time(value: object) -> float:
    """Seconds as a float; raises ToolCallError for anything that is not a time."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ToolCallError(f"time {_short(value)} has type {type(value).__name__}; {_HINT}")
    if isinstance(value, str):
        return _parse_time_str(value)
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds):
        raise ToolCallError(f"time {_short(value)} is not a finite number; {_HINT}")
    return seconds


def _short(value: object) -> str:
    """A bounded repr for error texts (a 400-digit integer is echoed as its first digits)."""
    try:
        text = repr(value)
    except ValueError:  # an int past Python's digit limit for str()
        return f"<{type(value).__name__} too large to print>"
    return text if len(text) <= 40 else text[:37] + "..."


def _parse_time_str(value: str) -> float:
    s = _UNIT.sub("", value.strip().lower()).strip()
    if _NUMBER.match(s):
        seconds = float(s)
        if math.isfinite(seconds):
            return seconds
    clock = _CLOCK.match(s)
    if clock:
        a, b, c, frac = clock.groups()
        if c is None:  # MM:SS
            minutes, secs, hours = int(a), int(b), 0
        else:  # HH:MM:SS
            hours, minutes, secs = int(a), int(b), int(c)
            if minutes >= 60:
                raise ToolCallError(f"time {value!r}: minutes {minutes} >= 60 in HH:MM:SS; {_HINT}")
        if secs >= 60:
            raise ToolCallError(f"time {value!r}: seconds {secs} >= 60; {_HINT}")
        return hours * 3600.0 + minutes * 60.0 + secs + (float(frac) if frac else 0.0)
    raise ToolCallError(f"time {value[:40]!r} is not a time; {_HINT}")
