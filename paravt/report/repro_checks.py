"""The repro section's checks of the pipeline: the offline filter of the RL prompts (what it kept,
and a line in red when it kept too few and RL trained on the whole pool), the parallel diagnosis
(does a window that overlaps the needle report it), the Tool Necessity Gap per variant and mode,
and the task check (can the method show on this task at this size, ``repro/task_check.py``)."""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from paravt.report.html_parts import fmt, iv_cell, num, real, table
from paravt.report.repro_runs import get


def _offline_filters(s: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(prior, its offline filter's report) for each prior whose RL prompts went through it."""
    sel = get(s, "selection")
    return [
        (str(prior), pf)
        for prior, block in (sel.items() if isinstance(sel, Mapping) else ())
        if isinstance(pf := get(block, "prefilter"), Mapping) and get(pf, "filter") == "offline"
    ]


def prefilter_note_html(s: Mapping[str, Any], run_dir: Path) -> str:
    """One red line per prior whose offline filter kept too few prompts (RL trained on the whole,
    unfiltered pool): the words `paravt repro` printed (``paravt.rl.prefilter.fallback_line``)."""
    from paravt.rl.prefilter import fallback_line

    return "".join(
        '<p class="note bad">'
        + html.escape(
            fallback_line(prior, pf, run_dir / f"sft_{prior}" / "prefilter" / "prefilter.json")
        )
        + "</p>"
        for prior, pf in _offline_filters(s)
        if get(pf, "fallback")
    )


def prefilter_html(s: Mapping[str, Any]) -> str:
    """The offline DAPO filter per prior: the pool, what it kept and dropped by rule, the mean
    accuracy of its rollouts, and which prompts RL trained on."""
    head = (
        "<tr><th class='l'>prior</th><th>pool</th><th>kept</th><th class='l'>dropped by rule</th>"
        "<th>G</th><th>mean rollout accuracy</th><th class='l'>RL trained on</th></tr>"
    )
    rows = []
    for prior, pf in _offline_filters(s):
        rules = get(pf, "by_rule")
        by_rule = (
            ", ".join(f"{html.escape(str(k))} {num(v)}" for k, v in rules.items())
            if isinstance(rules, Mapping) and rules
            else "none"
        )
        fell_back = bool(get(pf, "fallback"))
        rows.append(
            [
                html.escape(prior),
                num(get(pf, "pool")),
                num(get(pf, "kept")),
                by_rule,
                num(get(pf, "g")),
                fmt(get(pf, "mean_accuracy")),
                '<span class="bad">the whole pool (too few kept)</span>'
                if fell_back
                else "the kept prompts",
            ]
        )
    return (
        table(head, rows, "prefilter", (0, 3, 6))
        if rows
        else '<p class="muted">No offline filter in summary.json (rl.filter online).</p>'
    )


DIAGNOSIS_KEYS = (
    "coverage",
    "recall",
    "false_reports",
    "timed_right",
    "acc_given_report",
    "clean",
)


def _share_cell(x: Any) -> str:
    rate = real(get(x, "rate"))
    if rate is None:
        return (
            "–" if get(x, "of") is None else f'– <span class="muted">(0/{num(get(x, "of"))})</span>'
        )
    return f'{rate:.3f} <span class="muted">({num(get(x, "hits"))}/{num(get(x, "of"))})</span>'


def diagnosis_html(s: Mapping[str, Any]) -> str:
    variants = get(s, "variants") or {}
    head = (
        "<tr><th class='l'>variant</th><th>episodes with "
        "windows</th><th>coverage</th><th>recall</th>"
        "<th>false reports</th><th>timed right</th><th>acc given report</th><th>clean</th></tr>"
    )
    rows = [
        [
            html.escape(v),
            num(get(variants, v, "diagnosis", "episodes_with_windows")),
            *(_share_cell(get(variants, v, "diagnosis", k)) for k in DIAGNOSIS_KEYS),
        ]
        for v in variants
    ]
    return (
        table(head, rows, "diagnosis")
        if rows
        else '<p class="muted">No variants in summary.json.</p>'
    )


def necessity_html(s: Mapping[str, Any]) -> str:
    variants = get(s, "variants") or {}
    head = (
        "<tr><th class='l'>variant</th><th class='l'>mode</th><th>acc tool-necessary</th>"
        "<th>acc tool-unnecessary</th><th>gap (unnec. − nec.)</th></tr>"
    )
    rows = []
    for v, block in variants.items():
        for mode, ev in (get(block, "eval") or {}).items():
            nec, unn = (
                real(get(ev, "acc_necessary", "mean")),
                real(get(ev, "acc_unnecessary", "mean")),
            )
            gap = None if nec is None or unn is None else unn - nec
            rows.append(
                [
                    html.escape(v),
                    html.escape(str(mode)),
                    iv_cell(get(ev, "acc_necessary")),
                    iv_cell(get(ev, "acc_unnecessary")),
                    fmt(gap),
                ]
            )
    return (
        table(head, rows, "necessity", (0, 1))
        if rows
        else '<p class="muted">No eval blocks in summary.json.</p>'
    )


TASK_CHECKS = (
    ("overview_shows_needle", "the n-frame overview shows the needle (share of questions, by n)"),
    ("direct_matches_tools_at_64", "at n = 64 direct answering is as good as tool use"),
    ("direct_near_chance_at_4", "at n = 4 direct answering is near chance"),
    ("direct_above_chance_at_64", "at n = 64 direct answering beats chance (the model can answer)"),
    (
        "subagent_recall",
        "the cold start's sub-agent given the needle's window reports it (≥ 30 windows)",
    ),
    ("subagent_clean", "the cold start's sub-agent summaries stay one clean line (≥ 30 windows)"),
    # issue 31: the tools pay, and only where the overview misses the needle (task_check.py)
    ("tools_pay_at_4", "the cold start at n = 4: tool use beats answering directly"),
    ("overview_suffices_at_64", "the cold start answers directly at n = 64 better than at n = 4"),
    ("cold_start_kappa", "the cold start's tool calls per τ = 0.7 rollout (paper 2.50)"),
    (
        "cold_start_answer_form",
        "the cold start's answers at n = 4 come in their question's form (each task)",
    ),
    # issue 27's stage targets (paravt/repro/base_probe.py, task_check.cold_start_checks)
    ("base_clip_recall", "the pretrained base, held-out clips with the needle: described"),
    (
        "base_clip_timed_right",
        "the base, held-out clips with the needle: a stated time overlaps it",
    ),
    ("base_clip_false_reports", "the base, held-out clips without the needle: something reported"),
    ("base_overview_mcq_at_64", "the base answers MCQ from a 64-frame overview"),
    ("base_overview_mcq_at_4", "the base at a 4-frame overview is near chance"),
    ("base_overview_open_at_64", "the base names the needle from a 64-frame overview (exact)"),
    (
        "base_reads_report",
        "the base answers the colour its tool response reports, not the one its frames show",
    ),
    (
        "base_reads_report_by_task",
        "the base answers what its tool response reports on every task (open, MCQ, span)",
    ),
    (
        "base_copies_in_context",
        "the base copies a run of tokens it saw 100 tokens before (an induction head)",
    ),
    (
        "cold_start_closure",
        "the strong-prior RL init's closure rates (%, τ = 0.7) vs the paper's Table 5",
    ),
    ("cold_start_tool_code", "the strong-prior RL init reverts to <tool_code> in some rollouts"),
)


def _check_value(x: Any) -> str:
    if isinstance(x, Mapping) and "mean" in x:
        return iv_cell(x)
    if isinstance(x, Mapping) and "rate" in x:
        return _share_cell(x)
    if isinstance(x, Mapping):
        return "; ".join(f"{html.escape(str(k))}: {_check_value(v)}" for k, v in x.items())
    return html.escape(fmt(x) if isinstance(x, (int, float)) else str(x))


def task_check_html(s: Mapping[str, Any]) -> str:
    """Deliverable 7: can the method show on this task at this size (``repro/task_check.py``)."""
    tc = get(s, "task_check")
    if not isinstance(tc, Mapping):
        return '<p class="muted">No task check in summary.json.</p>'
    head = (
        "<tr><th class='l'>check</th><th class='l'>measured</th><th "
        "class='l'>want</th><th>holds</th></tr>"
    )
    rows = [
        [
            html.escape(text),
            _check_value(get(tc, key, "value")),
            html.escape(str(get(tc, key, "want") or "")),
            '<span class="ok">yes</span>'
            if get(tc, key, "holds")
            else '<span class="bad">no</span>',
        ]
        for key, text in TASK_CHECKS
        if isinstance(get(tc, key), Mapping)
    ]
    ref = get(tc, "reference")
    note = f'<p class="muted">reference checkpoint: {html.escape(str(ref))}</p>' if ref else ""
    return note + table(head, rows, "task-check", (0, 1, 2))


def paths_html(s: Mapping[str, Any]) -> str:
    """The reward-by-path table of the RL init (``repro.paths``), one row per (variant, n, path),
    and each cell's call − direct contrasts."""
    from paravt.repro.paths import predicted_sign
    from paravt.rewards.metrics import PATHS

    by_path = get(s, "reward_by_path") or {}
    head = (
        "<tr><th class='l'>variant</th><th>n</th><th class='l'>path</th><th>share</th>"
        "<th>accuracy</th><th>mean reward</th><th>mean advantage</th></tr>"
    )
    rows, notes = [], []
    for v, by_n in by_path.items():
        for n, t in (by_n or {}).items():
            for p in PATHS:
                c = get(t, "paths", p) or {}
                rows.append(
                    [
                        html.escape(v),
                        html.escape(str(n)),
                        p,
                        f"{fmt(get(c, 'share'))} ({num(get(c, 'n'))})",
                        iv_cell(get(c, "acc")) if get(c, "acc") else "–",
                        iv_cell(get(c, "reward")) if get(c, "reward") else "–",
                        iv_cell(get(c, "advantage")) if get(c, "advantage") else "–",
                    ]
                )
            diff = get(t, "call_minus_direct", "advantage")
            decision = get(t, "attempt_minus_skip", "advantage")
            sign = {1: "calls up", -1: "calls down", 0: "no clear push", None: "–"}
            notes.append(
                f"<li>{html.escape(v)} n={html.escape(str(n))}: executed − direct advantage "
                f"{iv_cell(diff) if diff else '–'}; wrote a call − wrote none "
                f"{iv_cell(decision) if decision else '–'} → {sign[predicted_sign(t)]}; "
                f"call break rate "
                f"{fmt(get(t, 'call_break_rate'))} vs direct break rate "
                f"{fmt(get(t, 'direct_break_rate'))}</li>"
            )
    if not rows:
        return '<p class="muted">No reward-by-path probe in summary.json.</p>'
    return table(head, rows, "reward by path") + f"<ul>{''.join(notes)}</ul>"
