"""The terminal view of a ``summary.json`` (`paravt repro` and `paravt demo` print it): one row per
variant on the one yardstick, then the claims with the paper's numbers beside ours. Pure: it reads
the summary dict and builds rich tables; the HTML report has the full "paper vs ours" section."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table


def cell(iv: Mapping[str, Any] | None, digits: int = 2) -> str:
    """``mean [lo, hi]`` (or the mean alone without an interval; ``–`` when missing)."""
    if (
        not iv
        or iv.get("mean") is None
        or (isinstance(iv["mean"], float) and math.isnan(iv["mean"]))
    ):
        return "–"
    text = f"{iv['mean']:.{digits}f}"
    if iv.get("lo") is not None and iv.get("hi") is not None:
        text += f" [{iv['lo']:.{digits}f}, {iv['hi']:.{digits}f}]"
    return text


def _acc(v: Mapping[str, Any], mode: str, n: str) -> str:
    block = v.get("eval", {}).get(mode, {}).get("acc_by_n", {})
    return cell(block.get(n))


def variants_table(summary: Mapping[str, Any]) -> Table:
    meta = summary.get("meta", {})
    t = Table(
        title=f"paravt repro ({meta.get('preset', '?')}, {meta.get('seeds', '?')} seed(s), "
        f"{meta.get('eval_questions', '?')} held-out questions): means [95% interval]"
    )
    t.add_column("variant", no_wrap=True)
    for col in (
        "f_tau",
        "κ",
        "think",
        "tool_call",
        "answer",
        "<tool_code>",
        "acc par n=4",
        "acc par n=64",
        "acc none n=4",
        "acc none n=64",
    ):
        t.add_column(col, min_width=6)  # "mean [lo, hi]" wraps after the mean rather than being cut
    for name, v in summary.get("variants", {}).items():
        closure = v.get("closure", {})
        t.add_row(
            name,
            cell(v.get("f_tau")),
            cell(v.get("kappa")),
            cell(closure.get("think")),
            cell(closure.get("tool_call")),
            cell(closure.get("answer")),
            cell(v.get("tool_code_rate")),
            _acc(v, "parallel", "4"),
            _acc(v, "parallel", "64"),
            _acc(v, "none", "4"),
            _acc(v, "none", "64"),
        )
    return t


def _pairs(d: Mapping[str, Any] | None) -> str:
    if not d:
        return "–"
    return ", ".join(f"{k} {_value(v)}" for k, v in d.items())


def _value(v: Any) -> str:
    if isinstance(v, Mapping):
        return cell(v)
    return f"{v:.2f}" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def claims_table(summary: Mapping[str, Any]) -> Table:
    t = Table(title="the paper's claims, checked on this run")
    for col in ("claim", "paper", "ours", "holds", "note"):
        t.add_column(col, overflow="fold")
    for c in summary.get("claims", []):
        t.add_row(
            c.get("claim", "?"),
            _pairs(c.get("paper")),
            _pairs(c.get("ours")),
            "[green]yes[/green]" if c.get("holds") else "[red]no[/red]",
            c.get("note", ""),
        )
    return t


def task_check_table(summary: Mapping[str, Any]) -> Table:
    """The stage checks (``summary["task_check"]``): can the method show on this testbed?"""
    t = Table(title="stage checks: can the method show here? (docs/repro.md)")
    for col in ("check", "measured", "want", "holds"):
        t.add_column(col, overflow="fold")
    for name, c in summary.get("task_check", {}).items():
        if isinstance(c, Mapping) and "holds" in c:
            t.add_row(
                name,
                _measured(c.get("value")),
                str(c.get("want", "")),
                "[green]yes[/green]" if c["holds"] else "[red]no[/red]",
            )
    return t


def _measured(v: Any) -> str:
    if isinstance(v, Mapping) and "mean" in v:
        return cell(v)
    if isinstance(v, Mapping) and "rate" in v:
        return "–" if v["rate"] is None else f"{v['rate']:.2f} ({v.get('hits')}/{v.get('of')})"
    if isinstance(v, Mapping):
        return "; ".join(f"{k} {_measured(x)}" for k, x in v.items() if x is not None)
    return _value(v) if v is not None else "–"


def print_summary(summary: Mapping[str, Any], console: Console) -> None:
    """The variants, the stage checks and the claims; claims whose variants were not run are
    counted, not listed."""
    console.print(variants_table(summary))
    console.print(task_check_table(summary))
    ran = [c for c in summary.get("claims", []) if not str(c.get("note", "")).startswith("not run")]
    console.print(claims_table({"claims": ran}))
    skipped = len(summary.get("claims", [])) - len(ran)
    if skipped:
        console.print(
            f"{skipped} claim(s) need variants this run did not train (`paravt repro` runs them "
            "all)."
        )
    console.print(verdict(ran))


def verdict(claims: list[Mapping[str, Any]]) -> str:
    """One line a newcomer reads first: which of the tested claims this run supports."""
    if not claims:
        return "this run tests none of the paper's claims"
    held = [str(c.get("claim", "?")) for c in claims if c.get("holds")]
    line = f"this run supports {len(held)} of the {len(claims)} paper claims it tests"
    return line + (
        ": " + "; ".join(held) if held else " (intervals in the table; docs/repro.md says why)"
    )


def checks_table(checks: Mapping[str, Any]) -> Table:
    """``checks.json`` (``repro.base_seeds``): each stage check per base seed, and whether it holds
    on every one."""
    seeds = list(checks.get("seeds") or [])
    t = Table(
        title=f"stage checks over {len(seeds)} base seed(s): a check holds when it holds on each"
    )
    t.add_column("check", no_wrap=True)
    for s in seeds:
        t.add_column(f"seed {s}", justify="center")
    t.add_column("all", justify="center")
    for name, c in (checks.get("checks") or {}).items():
        marks = ["✓" if h else "✗" for h in c.get("holds") or []]
        t.add_row(name, *marks, "✓" if c.get("holds_on_all") else "✗")
    return t


def curve_table(rows: Sequence[Mapping[str, Any]], title: str) -> Table:
    """``repro.base_curve.curve_rows``: one row per probed base checkpoint, one column per check
    (its headline number, ✗ where it does not hold)."""
    names = [k for r in rows for k in r if k != "step"]
    names = list(dict.fromkeys(names))
    t = Table(title=title)
    t.add_column("step", justify="right")
    for n in names:
        t.add_column(n.removeprefix("base_"), justify="center")
    for r in rows:
        marks = []
        for n in names:
            value, holds = r.get(n, (None, False))
            shown = f"{value:.2f}" if isinstance(value, float) else str(value)
            marks.append(shown if holds else f"{shown} ✗")
        t.add_row(str(r["step"]), *marks)
    return t
