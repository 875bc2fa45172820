"""One step's sampled rollouts (the rows of ``rollouts.jsonl``, `paravt.rl.rollouts`) as a flat
table for the trackers: the raw text, the parsed tags, each reward term and the advantage."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

FIXED = (
    "step",
    "picked",
    "episode_id",
    "group",
    "prompt_id",
    "nframes",
    "question",
    "gold",
    "answer",
    "completion",
    "reward",
    "format",
    "advantage",
    "end_reason",
    "n_calls",
    "calls",
)


def rollout_table(rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """(columns, rows): ``FIXED``, then ``term/<name>`` per reward term and ``tag/<name>`` per
    tag."""
    terms = sorted({k for r in rows for k in (r.get("terms") or {})})
    tags = sorted({k for r in rows for k in (r.get("tags") or {}) if k != "n_calls"})
    columns = [*FIXED, *(f"term/{t}" for t in terms), *(f"tag/{t}" for t in tags)]
    out = []
    for r in rows:
        r_terms, r_tags = r.get("terms") or {}, r.get("tags") or {}
        fixed = {
            **r,
            "n_calls": r_tags.get("n_calls", len(r.get("calls") or ())),
            "calls": _calls(r.get("calls") or ()),
        }
        out.append(
            [_cell(fixed.get(c)) for c in FIXED]
            + [_cell(r_terms.get(t)) for t in terms]
            + [_cell(r_tags.get(t)) for t in tags]
        )
    return columns, out


def numeric(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The finite numbers of a step's metrics (bools as 0/1): what a tracker's chart can plot."""
    out = {}
    for k, v in metrics.items():
        if isinstance(v, bool):
            v = float(v)
        if isinstance(v, (int, float)) and math.isfinite(v):
            out[k] = float(v)
    return out


def _calls(calls: Sequence[Any]) -> str | None:
    """The tool and sub-agent calls of a rollout, one per line: ``turn.name[start-end] ok|error``
    and the first words of what came back."""
    lines = []
    for c in calls:
        if not isinstance(c, Mapping):
            continue
        w = c.get("window") or [None, None]
        window = (
            f"[{w[0]}-{w[1]}]" if isinstance(w, list) and len(w) == 2 and w[0] is not None else ""
        )
        status = "ok" if c.get("ok") else f"error: {c.get('error')}"
        said = str(c.get("summary") or "")[:120]
        lines.append(
            f"{c.get('turn')}.{c.get('name')}{window} {status}" + (f": {said}" if said else "")
        )
    return "\n".join(lines) or None


def _cell(v: Any) -> Any:
    if v is None or isinstance(v, (str, bool, int)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    return str(v)
