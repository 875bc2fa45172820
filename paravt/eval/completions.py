"""One JSON line of completions to score (``paravt score``, ``paravt score --benchmark``): the
checks both input formats share; each caller adds its own fields' checks."""

from __future__ import annotations

import json
from typing import Any

from paravt.errors import DataError


def completion_line(line: str) -> dict[str, Any]:
    """The line as a JSON object with a string ``completion`` and, if given, ``options`` as a list
    of strings; `DataError` naming the rule otherwise."""
    try:
        row = json.loads(line)
    except ValueError as exc:
        raise DataError(f"line is not JSON: {exc}") from None
    if not isinstance(row, dict):
        raise DataError("line must be a JSON object")
    if not isinstance(row.get("completion"), str):
        raise DataError('"completion" must be a string')
    opts = row.get("options")
    if opts is not None and not (isinstance(opts, list) and all(isinstance(o, str) for o in opts)):
        raise DataError('"options" must be a list of strings')
    return row
