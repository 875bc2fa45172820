"""The report's "paper vs ours" section for `paravt repro` output directories (issue 19).

Every value of the summary reaches the page escaped (`html_parts.esc` / ``html.escape``) or
formatted from its typed value (`iv_cell`, `html_parts.num`); a block of the wrong shape is a note.

A directory is a repro run when its ``summary.json`` holds ``"variants"`` and ``"claims"``
(docs/repro.md). The summary and the per-seed ``VARIANT/seed*/train_log.jsonl`` are read as data
(``paravt.report.repro_runs``). Rendered: the paper's Table 2 and Table 5 layouts
with the paper's quoted values (``paper_numbers``) beside ours, the training dynamics over seeds,
accuracy vs n per mode, the claims, the pipeline checks (``paravt.report.repro_checks``) and the
run's meta. A missing variant
or key shows "–"; an unreadable file becomes a note in the section, never an exception.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from paravt.report.html_parts import figure_html, fmt, iv_cell, real, section, table
from paravt.report.repro_checks import (
    diagnosis_html,
    necessity_html,
    paths_html,
    prefilter_html,
    prefilter_note_html,
    task_check_html,
)
from paravt.report.repro_figures import acc_vs_n_figure, dynamics_figure, paths_figure
from paravt.report.repro_runs import ReproRun, find_runs, get
from paravt.repro.paper_numbers import TABLE2, TABLE5, Table2Row

_DISPATCH = {"sequential_dispatch": "sequential", "parallel_dispatch": "parallel"}


def _paper(x: float | None, digits: int = 2, suffix: str = "") -> str:
    return "–" if x is None else f"{x:.{digits}f}{suffix}"


# ---------------------------------------------------------------- tables


def _table2_rows(s: Mapping[str, Any]) -> list[tuple[str, Table2Row | None, Any, Any, Any]]:
    """(our row label, paper row, our train block, parallel acc at n=4, at n=64)."""
    variants = get(s, "variants") or {}
    rows: list[tuple[str, Table2Row | None, Any, Any, Any]] = []
    for key, paper in TABLE2.items():
        if key in _DISPATCH:
            ev = get(variants, "paragrpo", "eval", _DISPATCH[key], "acc_by_n")
            rows.append(
                (f"paragrpo · {_DISPATCH[key]} dispatch", paper, None, get(ev, "4"), get(ev, "64"))
            )
        elif key == "base":
            rows.append(("(base model: not a variant)", paper, None, None, None))
        else:
            rows.append(_variant_row(key, paper, variants))
    rows += [_variant_row(v, None, variants) for v in variants if v not in TABLE2]
    return rows


def _variant_row(
    name: str, paper: Table2Row | None, variants: Mapping[str, Any]
) -> tuple[str, Table2Row | None, Any, Any, Any]:
    v = get(variants, name)
    ev = get(v, "eval", "parallel", "acc_by_n")
    return (name if v is not None else f"{name} (not run)", paper, v, get(ev, "4"), get(ev, "64"))


def table2_html(s: Mapping[str, Any]) -> str:
    head = (
        '<tr><th class="l" rowspan="2">variant (ours)</th><th class="l" rowspan="2">paper row</th>'
        '<th colspan="2">f_τ</th><th colspan="2">κ (calls / rollout)</th>'
        '<th colspan="2">ours: accuracy, parallel</th><th rowspan="2">paper: VideoMME</th></tr>'
        "<tr><th>paper</th><th>ours</th><th>paper</th><th>ours</th><th>n = 4</th><th>n = "
        "64</th></tr>"
    )
    rows = [
        [
            html.escape(label),
            html.escape(p.label) if p else "–",
            _paper(p.f_tau if p else None),
            iv_cell(get(v, "f_tau")),
            _paper(p.kappa if p else None),
            iv_cell(get(v, "kappa")),
            iv_cell(a4),
            iv_cell(a64),
            _paper(p.videomme if p else None, 1),
        ]
        for label, p, v, a4, a64 in _table2_rows(s)
    ]
    return table(head, rows, "paper-table2", (0, 1))


def table5_html(s: Mapping[str, Any]) -> str:
    variants = get(s, "variants") or {}
    names = [k for k in TABLE5 if k != "think_prefix_only"] + [
        v for v in variants if v not in TABLE5
    ]
    names += ["think_prefix_only"]
    head = (
        '<tr><th class="l" rowspan="2">variant (ours)</th><th class="l" rowspan="2">paper row</th>'
        '<th colspan="2">&lt;think&gt; closed (%)</th><th colspan="2">&lt;tool_call&gt; closed + '
        "JSON (%)</th>"
        '<th colspan="2">&lt;answer&gt; bracketed (%)</th></tr><tr>'
        + "<th>paper</th><th>ours</th>" * 3
        + "</tr>"
    )
    rows = []
    for name in names:
        papers = TABLE5.get(name, ())
        label = (
            "(no variant of ours)"
            if name == "think_prefix_only"
            else name + ("" if name in variants else " (not run)")
        )
        cells = [html.escape(label), "<br>".join(html.escape(p.label) for p in papers) or "–"]
        for col in ("think", "tool_call", "answer"):
            cells += [
                "<br>".join(_paper(getattr(p, col), 1, "%") for p in papers) or "–",
                iv_cell(get(variants, name, "closure", col), 1, 100.0),
            ]
        rows.append(cells)
    return table(head, rows, "paper-table5", (0, 1))


def _claim_value(x: Any) -> str:
    if isinstance(x, Mapping) and "mean" in x:
        return iv_cell(x)
    return fmt(real(x)) if real(x) is not None else fmt(x)


def _quoted(x: Any) -> str:
    """A paper number as the paper writes it (2.5, 0.02, 62.1: no padding digits)."""
    return f"{x:g}" if real(x) is not None else fmt(x)


def claims_html(s: Mapping[str, Any]) -> str:
    claims = get(s, "claims")
    if not isinstance(claims, list) or not claims:
        return '<p class="muted">No claims in summary.json.</p>'
    head = (
        '<tr><th class="l">claim</th><th class="l">paper</th><th '
        'class="l">ours</th><th>holds</th><th class="l">note</th></tr>'
    )
    rows = []
    for c in claims:
        paper, ours = get(c, "paper"), get(c, "ours")
        side = [
            "<br>".join(f"{html.escape(str(k))} = {quote(v)}" for k, v in d.items())
            if isinstance(d, Mapping)
            else fmt(d)
            for d, quote in ((paper, _quoted), (ours, _claim_value))
        ]
        holds = get(c, "holds")
        mark = (
            '<span class="ok">yes</span>'
            if holds is True
            else '<span class="bad">no</span>'
            if holds is False
            else "–"
        )
        rows.append([html.escape(str(get(c, "claim") or "–")), *side, mark, fmt(get(c, "note"))])
    return table(head, rows, "claims", (0, 1, 2, 4))


def meta_html(s: Mapping[str, Any]) -> str:
    meta = get(s, "meta") or {}
    items = [
        f"<li>{k}: <b>{fmt(get(meta, k), 1)}</b></li>"
        for k in ("preset", "seeds", "eval_questions", "wall_s")
    ]
    items.append(
        f"<li>SFT closes &lt;think&gt; without the prefix (τ = 0.7): "
        f"<b>{fmt(real(get(s, 'sft_emits_think_without_prefix')))}</b></li>"
    )
    stages = get(meta, "stage_s")
    rows = (
        [[html.escape(str(k)), fmt(real(v), 1)] for k, v in stages.items()]
        if isinstance(stages, Mapping)
        else []
    )
    stage_table = (
        (
            f"<details><summary>wall seconds per stage ({len(rows)})</summary>"
            + table("<tr><th class='l'>stage</th><th>s</th></tr>", rows)
            + "</details>"
        )
        if rows
        else ""
    )
    return f"<ul>{''.join(items)}</ul>{stage_table}"


# ---------------------------------------------------------------- figures and the section


def dynamics_html(run: ReproRun) -> str:
    s = run.summary
    cold = {
        k: m
        for k in ("f_tau", "kappa")
        if (m := real(get(s, "variants", "sft", k, "mean"))) is not None
    }
    return figure_html(
        lambda: dynamics_figure(run.logs, cold), "f_tau and kappa per RL step, per variant"
    )


def acc_curves(s: Mapping[str, Any]) -> dict[tuple[str, str], dict[int, Any]]:
    """(variant, mode) → {n: interval} for the variants evaluated in more than one mode (the
    full grid); every variant when none was."""
    variants = get(s, "variants") or {}
    evals = {v: e for v, b in variants.items() if isinstance(e := get(b, "eval"), Mapping)}
    grid = {v: e for v, e in evals.items() if len(e) > 1} or evals
    return {
        (v, str(m)): {
            int(n): iv
            for n, iv in (get(ev, "acc_by_n") or {}).items()
            if str(n).isdigit() and isinstance(iv, Mapping)
        }
        for v, e in grid.items()
        for m, ev in e.items()
    }


def _guard(make: Callable[[], str], what: str) -> str:
    """``make()``, or a note when the summary's shape is not what it expects."""
    try:
        return make()
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        return (
            f'<p class="muted">{html.escape(what)} could not be rendered: '
            f"{html.escape(repr(e))}</p>"
        )


def _paths_parts(s: Mapping[str, Any]) -> list[str]:
    """The RL init's reward by path (``repro.paths``): heading, note, figure and table."""
    return [
        "<h3>Reward by path: the RL init before any update</h3>",
        (
            '<p class="muted">τ = 0.7 rollouts of the chosen cold start, each variant with its own '
            "rollout settings and reward; a rollout's path: a call executed, a call written but "
            "not run, answered without a call, broken (no call, no finished answer). The executed "
            "− direct advantage predicts the sign of GRPO's first push on calls "
            "(docs/repro.md).</p>"
        ),
        _guard(
            lambda: figure_html(
                lambda: paths_figure(get(s, "reward_by_path") or {}), "reward by path"
            ),
            "reward by path figure",
        ),
        _guard(lambda: paths_html(s), "reward by path table"),
    ]


def run_html(run: ReproRun) -> str:
    s = run.summary
    parts = [
        f'<p class="note bad">{html.escape(run.note)}</p>' if run.note else "",
        _guard(lambda: prefilter_note_html(s, run.path), "the offline filter's note"),
        "<h3>Training dynamics: f<sub>τ</sub> and κ per step (the analogue of the paper's Figure "
        "4)</h3>",
        _guard(lambda: dynamics_html(run), "training dynamics"),
        "<h3>Table 2 layout: format under τ = 0.7 and tool calls</h3>",
        (
            '<p class="muted">Paper values quoted from the ParaVT paper (Qwen3-VL-8B, real '
            "benchmarks), "
            "never measured here; ours: mean [95% interval over seeds] of the last half of the "
            "RL steps "
            "(sft: a τ = 0.7 probe), accuracy on held-out ParaVT-Synth with a bootstrap interval "
            "over "
            "questions. The paper's VideoMME is a different benchmark: compare orderings, not "
            "levels.</p>"
        ),
        _guard(lambda: table2_html(s), "Table 2"),
        "<h3>Table 5 layout: closure rates in raw τ = 0.7 rollouts</h3>",
        _guard(lambda: table5_html(s), "Table 5"),
        *_paths_parts(s),
        "<h3>Accuracy vs n per dispatch mode (the Tool Necessity Gap curve)</h3>",
        _guard(
            lambda: figure_html(lambda: acc_vs_n_figure(acc_curves(s)), "accuracy vs n per mode"),
            "accuracy vs n",
        ),
        _guard(lambda: necessity_html(s), "Tool Necessity Gap table"),
        "<h3>The paper's claims</h3>",
        _guard(lambda: claims_html(s), "claims"),
        "<h3>Parallel pipeline diagnosis</h3>",
        (
            '<p class="muted">coverage: some window overlaps the needle; recall: overlapping '
            "windows whose "
            "sub-agent reports something; false reports: the same on the other windows; timed "
            "right: "
            "reports whose stated span overlaps the needle; acc given report: answer accuracy "
            "when an "
            "overlapping window reported (docs/repro.md).</p>"
        ),
        _guard(lambda: diagnosis_html(s), "diagnosis"),
        "<h3>The offline DAPO filter of the RL prompts</h3>",
        _guard(lambda: prefilter_html(s), "the offline filter"),
        "<h3>Can the method show here? (task check)</h3>",
        _guard(lambda: task_check_html(s), "task check"),
        "<h3>Run</h3>",
        _guard(lambda: meta_html(s), "meta"),
    ]
    return "\n".join(p for p in parts if p)


def paper_vs_ours_section(run_dirs: Sequence[Path]) -> str | None:
    """The "paper vs ours" section for the repro runs under ``run_dirs``; None when there is
    none."""
    runs = find_runs(run_dirs)
    if not runs:
        return None
    body = "\n".join(
        (
            f'<h3 class="run">{html.escape(str(r.path))}</h3>\n'
            if len(runs) > 1
            else f'<p class="muted">{html.escape(str(r.path))}</p>\n'
        )
        + run_html(r)
        for r in runs
    )
    return section("paper-vs-ours", "Paper vs ours (paravt repro)", body)
