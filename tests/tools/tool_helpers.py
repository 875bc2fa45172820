"""Helpers of the tool tests (a uniquely named module: conftest files cannot be imported)."""

from __future__ import annotations

from typing import Any

from paravt.protocol.parser import ParsedCall


def call(
    name: str | None, index: int = 0, error: str | None = None, **arguments: Any
) -> ParsedCall:
    return ParsedCall(
        index=index,
        name=name,
        arguments=dict(arguments),
        raw="",
        source="json",
        closed=True,
        error=error,
    )
