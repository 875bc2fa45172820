"""The report's section "Rollouts during RL": each RL step's sampled rollouts (``rollouts.jsonl``,
written by `paravt.rl.rollouts`), every field checked before it reaches the page."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from paravt.report.html_parts import esc

VIEW_CHARS = 2500  # of a completion on the page
_REVERSION = '<b class="bad">yes</b>'
_MARKED = re.compile(r"(&lt;/?tool_code&gt;|&lt;/?answer&gt;|&lt;/?tool_call&gt;|&lt;/?think&gt;)")
_TAGS = ("closed_think", "closed_tool_call", "closed_answer", "tool_code")


@dataclass(frozen=True)
class RolloutView:
    """One ``rollouts.jsonl`` row as the report shows it, every field of its type (`view`)."""

    step: int
    picked: str
    nframes: int | None
    reward: float
    terms: tuple[tuple[str, float], ...]
    advantage: float | None  # None: the online filters dropped the group
    tags: tuple[bool, bool, bool, bool]  # _TAGS
    n_calls: int
    gold: str
    answer: str
    completion: str
    truncated_chars: int
    calls: tuple[tuple[str, str, str], ...]  # (name, window text, summary or error)


def _real(x: Any, what: str, *, integer: bool = False) -> Any:
    if isinstance(x, bool) or not isinstance(x, int if integer else (int, float)):
        raise ValueError(
            f"{what} is {str(x)[:40]!r}, not {'an integer' if integer else 'a number'}"
        )
    return x


def _flag(x: Any, what: str) -> bool:
    if not isinstance(x, bool):
        raise ValueError(f"{what} is {str(x)[:40]!r}, not true/false")
    return x


def _object(x: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(x, Mapping):
        raise ValueError(f"{what} is {str(x)[:40]!r}, not an object")
    return x


def _window(w: Any) -> str:
    """A call's window as text: ``[a, b]`` from two numbers (or nulls)."""
    if not isinstance(w, (list, tuple)) or len(w) != 2:
        raise ValueError(f"window is {str(w)[:40]!r}, not [start, end]")
    a, b = (None if x is None else float(_real(x, "window")) for x in w)
    return "[" + ", ".join("?" if x is None else f"{x:.1f}" for x in (a, b)) + "]"


def view(r: Mapping[str, Any]) -> RolloutView:
    """The typed view of one row; ``ValueError`` naming the first field that is not of its type."""
    tags, terms = _object(r.get("tags", {}), "tags"), _object(r.get("terms", {}), "terms")
    adv, nframes = r.get("advantage"), r.get("nframes")
    calls = []
    for c in r.get("calls") or ():
        c = _object(c, "a call")
        calls.append(
            (
                str(c.get("name")),
                _window(c.get("window")),
                str(c.get("summary") or c.get("error") or ""),
            )
        )
    return RolloutView(
        step=_real(r.get("step", 0), "step", integer=True),
        picked=str(r.get("picked")),
        nframes=None if nframes is None else _real(nframes, "nframes", integer=True),
        reward=float(_real(r.get("reward", 0), "reward")),
        terms=tuple((str(k), float(_real(v, f"terms.{k}"))) for k, v in terms.items()),
        advantage=None if adv is None else float(_real(adv, "advantage")),
        tags=tuple(_flag(tags.get(t, False), f"tags.{t}") for t in _TAGS),  # type: ignore[arg-type]
        n_calls=_real(tags.get("n_calls", 0), "tags.n_calls", integer=True),
        gold=str(r.get("gold")),
        answer=str(r.get("answer")),
        completion=str(r.get("completion", "")),
        truncated_chars=_real(r.get("truncated_chars", 0), "truncated_chars", integer=True),
        calls=tuple(calls),
    )


def shown_steps(steps: Sequence[int], k: int = 3) -> list[int]:
    """First, middle and last step (k spread evenly): the story of a run in a few steps."""
    s = sorted(set(steps))
    if len(s) <= k:
        return s
    return sorted({s[round(j * (len(s) - 1) / (k - 1))] for j in range(k)})


def _tick(ok: bool) -> str:
    return '<span class="ok">✓</span>' if ok else '<span class="bad">✗</span>'


def _row_html(v: RolloutView) -> str:
    think, tool_call, answer, tool_code = v.tags
    head = (
        f"step {v.step:d} · {esc(v.picked)} · n={'–' if v.nframes is None else f'{v.nframes:d}'} · "
        f"R={v.reward:+.2f} ("
        + ", ".join(f"{esc(k)} {x:.2f}" for k, x in v.terms)
        + f") · A={'dropped' if v.advantage is None else f'{v.advantage:+.2f}'} · "
        f"think {_tick(think)} tool_call {_tick(tool_call)} answer {_tick(answer)} · "
        "&lt;tool_code&gt; "
        f"{_REVERSION if tool_code else 'no'} · calls {v.n_calls:d} · gold {esc(v.gold)} · "
        f"answer {esc(v.answer)}"
    )
    more = len(v.completion) - VIEW_CHARS + v.truncated_chars
    body = _MARKED.sub(r"<mark>\1</mark>", esc(v.completion[:VIEW_CHARS])) + (
        f"… (+{more:d} chars)" if more > 0 else ""
    )
    calls = "".join(
        f"<li>{esc(name)} {esc(window)}: {esc(text)}</li>" for name, window, text in v.calls
    )
    return (
        f'<div class="card"><p>{head}</p><div class="turn assistant">{body}</div>'
        + (f"<ul class='muted'>{calls}</ul>" if calls else "")
        + "</div>"
    )


def _malformed_html(bad: Sequence[str], shown: int = 5) -> str:
    more = f"; and {len(bad) - shown} more" if len(bad) > shown else ""
    return (
        f'<p class="bad malformed">{len(bad)} malformed row(s) not shown: '
        + "; ".join(esc(b) for b in bad[:shown])
        + f"{more}</p>"
    )


def rollouts_html(runs: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> str:
    """The section "Rollouts during RL": per run, its rows of the first, middle and last logged
    step; a row whose fields are not of their types is listed as malformed (`view`), not shown."""
    parts = []
    for j, (name, rows) in enumerate(runs):
        if not rows:
            continue
        views, bad = [], []
        for i, r in enumerate(rows, 1):
            try:
                views.append(view(r))
            except (ValueError, TypeError, OverflowError) as e:
                bad.append(f"row {i}: {e}")
        steps = shown_steps([v.step for v in views])
        cards = "".join(_row_html(v) for v in views if v.step in steps)
        parts.append(
            f"<details{' open' if j == 0 else ''}><summary><b>{esc(name)}</b>: steps "
            f"{', '.join(f'{s:d}' for s in steps)} of {len({v.step for v in views})}</summary>"
            f"{_malformed_html(bad) if bad else ''}{cards}</details>"
        )
    return "".join(parts) or '<p class="muted">No rollouts.jsonl in the RL runs.</p>'
