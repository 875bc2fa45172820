"""The reference YAML that explains itself: every field with its ``description`` as a comment above
it (``paravt config show``); the text stays valid YAML, so it loads back into the same config."""

from __future__ import annotations

import textwrap
from typing import Any

import yaml
from pydantic import BaseModel

WIDTH = 100


def explained(cfg: BaseModel) -> str:
    """``cfg`` as YAML, each field preceded by its description (wrapped, ``# `` comments)."""
    return "\n".join(_lines(cfg, 0)) + "\n"


def _lines(model: BaseModel, depth: int) -> list[str]:
    pad = "  " * depth
    out: list[str] = []
    for name, field in type(model).model_fields.items():
        if field.description:
            out += textwrap.wrap(
                field.description,
                WIDTH - len(pad) - 2,
                initial_indent=f"{pad}# ",
                subsequent_indent=f"{pad}# ",
                break_on_hyphens=False,
            )
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            out.append(f"{pad}{name}:")
            out += _lines(value, depth + 1)
        else:
            out.append(f"{pad}{name}: {_scalar(value)}")
    return out


def _scalar(value: Any) -> str:
    """One value in YAML flow style (lists inline), as ``model_dump(mode="json")`` writes it."""
    if isinstance(value, BaseModel):  # pragma: no cover - handled by the caller
        raise TypeError(value)
    if isinstance(value, tuple):
        value = list(value)
    return (
        yaml.safe_dump(value, default_flow_style=True, width=10**6)
        .strip()
        .removesuffix("...")
        .strip()
    )
