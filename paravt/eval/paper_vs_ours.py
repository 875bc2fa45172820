"""The report's "paper vs ours" section for `paravt repro` output directories (issue 19).

Every value of the summary reaches the page escaped (`html_parts.esc` / ``html.escape``) or
formatted from its typed value (`iv_cell`, `html_parts.num`); a block of the wrong shape is a note.

A directory is a repro run when its ``summary.json`` holds ``"variants"`` and ``"claims"``
(docs/repro.md). The summary and the per-seed ``VARIANT/seed*/train_log.jsonl`` are read as data
(``eval`` sits below ``repro`` in the layers). Rendered: the paper's Table 2 and Table 5 layouts
with the paper's quoted values (``paper_numbers``) beside ours, the training dynamics over seeds,
accuracy vs n per mode, the claims, the pipeline diagnosis and the run's meta. A missing variant
or key shows "–"; an unreadable file becomes a note in the section, never an exception.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paravt.eval.html_parts import figure_html, fmt, num, section
from paravt.eval.paper_numbers import TABLE2, TABLE5, Table2Row
from paravt.eval.repro_figures import acc_vs_n_figure, dynamics_figure
from paravt.jsonl import read_jsonl

SUMMARY = "summary.json"
_STAGE_MARKER = ".repro-stage-done"
_DISPATCH = {"sequential_dispatch": "sequential", "parallel_dispatch": "parallel"}
_NOT_VARIANTS = ("base", *_DISPATCH)
DIAGNOSIS_KEYS = ("coverage", "recall", "false_reports", "timed_right", "acc_given_report")


@dataclass(frozen=True)
class ReproRun:
    path: Path
    summary: dict[str, Any]  # {} when unreadable (``note`` says why)
    logs: dict[str, list[list[dict[str, Any]]]] = field(default_factory=dict)  # variant → one log per seed
    note: str | None = None


def get(d: Any, *keys: str) -> Any:
    """``d[k1][k2]…`` or None where a level is missing or not a mapping."""
    for k in keys:
        if not isinstance(d, Mapping) or k not in d:
            return None
        d = d[k]
    return d


def _seed_logs(path: Path) -> dict[str, list[list[dict[str, Any]]]]:
    out: dict[str, list[list[dict[str, Any]]]] = {}
    for vdir in sorted(p for p in path.iterdir() if p.is_dir()):
        seeds = sorted(vdir.glob("seed*/train_log.jsonl"),
                       key=lambda f: int(m.group()) if (m := re.search(r"\d+", f.parent.name)) else -1)
        logs = [log for f in seeds if (log := read_jsonl(f))]
        if logs:
            out[vdir.name] = logs
    return out


def load_run(path: Path) -> ReproRun | None:
    """The repro run at ``path``, or None when ``path`` is not one. An unreadable summary.json
    next to repro stage markers is still a repro run, with a note."""
    try:
        summary = json.loads((path / SUMMARY).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        if not any(path.glob(f"*/{_STAGE_MARKER}")):
            return None
        return ReproRun(path, {}, _seed_logs(path), f"{path / SUMMARY} could not be read ({e}); tables left empty")
    if not isinstance(summary, dict) or not isinstance(summary.get("variants"), dict) or "claims" not in summary:
        return None
    return ReproRun(path, summary, _seed_logs(path))


def find_runs(run_dirs: Sequence[Path]) -> list[ReproRun]:
    """Repro runs at or under ``run_dirs`` (each directory once)."""
    dirs = sorted({f.parent.resolve() for d in run_dirs if Path(d).is_dir() for f in Path(d).rglob(SUMMARY)})
    return [r for d in dirs if (r := load_run(d)) is not None]


# ---------------------------------------------------------------- cells


def _real(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def iv_cell(iv: Any, digits: int = 3, scale: float = 1.0) -> str:
    """``mean [lo, hi]`` of an interval dict (``mean`` alone without an interval), "–" if absent."""
    mean = _real(get(iv, "mean"))
    if mean is None:
        return "–"
    lo, hi = _real(get(iv, "lo")), _real(get(iv, "hi"))
    text = f"{mean * scale:.{digits}f}"
    if lo is not None and hi is not None:
        text += f' <span class="muted">[{lo * scale:.{digits}f}, {hi * scale:.{digits}f}]</span>'
    return text


def _paper(x: float | None, digits: int = 2, suffix: str = "") -> str:
    return "–" if x is None else f"{x:.{digits}f}{suffix}"


def _table(head: str, rows: Sequence[Sequence[str]], css: str = "", left: Sequence[int] = (0,)) -> str:
    """Rows of ready cell HTML; columns ``left`` are left-aligned (text), the rest numbers."""
    body = "".join("<tr>" + "".join(f'<td class="{"l" if i in left else ""}">{c}</td>' for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f'<table class="{css}">{head}{body}</table>'


# ---------------------------------------------------------------- tables


def _table2_rows(s: Mapping[str, Any]) -> list[tuple[str, Table2Row | None, Any, Any, Any]]:
    """(our row label, paper row, our train block, parallel acc at n=4, at n=64)."""
    variants = get(s, "variants") or {}
    rows: list[tuple[str, Table2Row | None, Any, Any, Any]] = []
    for key, paper in TABLE2.items():
        if key in _DISPATCH:
            ev = get(variants, "paragrpo", "eval", _DISPATCH[key], "acc_by_n")
            rows.append((f"paragrpo · {_DISPATCH[key]} dispatch", paper, None, get(ev, "4"), get(ev, "64")))
        elif key == "base":
            rows.append(("(base model: not a variant)", paper, None, None, None))
        else:
            rows.append(_variant_row(key, paper, variants))
    rows += [_variant_row(v, None, variants) for v in variants if v not in TABLE2]
    return rows


def _variant_row(name: str, paper: Table2Row | None, variants: Mapping[str, Any]) -> tuple[str, Table2Row | None, Any, Any, Any]:
    v = get(variants, name)
    ev = get(v, "eval", "parallel", "acc_by_n")
    return (name if v is not None else f"{name} (not run)", paper, v, get(ev, "4"), get(ev, "64"))


def table2_html(s: Mapping[str, Any]) -> str:
    head = ('<tr><th class="l" rowspan="2">variant (ours)</th><th class="l" rowspan="2">paper row</th>'
            '<th colspan="2">f_τ</th><th colspan="2">κ (calls / rollout)</th>'
            '<th colspan="2">ours: accuracy, parallel</th><th rowspan="2">paper: VideoMME</th></tr>'
            "<tr><th>paper</th><th>ours</th><th>paper</th><th>ours</th><th>n = 4</th><th>n = 64</th></tr>")
    rows = [[html.escape(label), html.escape(p.label) if p else "–", _paper(p.f_tau if p else None),
             iv_cell(get(v, "f_tau")), _paper(p.kappa if p else None), iv_cell(get(v, "kappa")),
             iv_cell(a4), iv_cell(a64), _paper(p.videomme if p else None, 1)]
            for label, p, v, a4, a64 in _table2_rows(s)]
    return _table(head, rows, "paper-table2", (0, 1))


def table5_html(s: Mapping[str, Any]) -> str:
    variants = get(s, "variants") or {}
    names = [k for k in TABLE5 if k != "think_prefix_only"] + [v for v in variants if v not in TABLE5]
    names += ["think_prefix_only"]
    head = ('<tr><th class="l" rowspan="2">variant (ours)</th><th class="l" rowspan="2">paper row</th>'
            '<th colspan="2">&lt;think&gt; closed (%)</th><th colspan="2">&lt;tool_call&gt; closed + JSON (%)</th>'
            '<th colspan="2">&lt;answer&gt; bracketed (%)</th></tr><tr>' + "<th>paper</th><th>ours</th>" * 3 + "</tr>")
    rows = []
    for name in names:
        papers = TABLE5.get(name, ())
        label = "(no variant of ours)" if name == "think_prefix_only" else name + ("" if name in variants else " (not run)")
        cells = [html.escape(label), "<br>".join(html.escape(p.label) for p in papers) or "–"]
        for col in ("think", "tool_call", "answer"):
            cells += ["<br>".join(_paper(getattr(p, col), 1, "%") for p in papers) or "–",
                      iv_cell(get(variants, name, "closure", col), 1, 100.0)]
        rows.append(cells)
    return _table(head, rows, "paper-table5", (0, 1))


def _claim_value(x: Any) -> str:
    if isinstance(x, Mapping) and "mean" in x:
        return iv_cell(x)
    return fmt(_real(x)) if _real(x) is not None else fmt(x)


def _quoted(x: Any) -> str:
    """A paper number as the paper writes it (2.5, 0.02, 62.1: no padding digits)."""
    return f"{x:g}" if _real(x) is not None else fmt(x)


def claims_html(s: Mapping[str, Any]) -> str:
    claims = get(s, "claims")
    if not isinstance(claims, list) or not claims:
        return '<p class="muted">No claims in summary.json.</p>'
    head = '<tr><th class="l">claim</th><th class="l">paper</th><th class="l">ours</th><th>holds</th><th class="l">note</th></tr>'
    rows = []
    for c in claims:
        paper, ours = get(c, "paper"), get(c, "ours")
        side = ["<br>".join(f"{html.escape(str(k))} = {quote(v)}" for k, v in d.items())
                if isinstance(d, Mapping) else fmt(d) for d, quote in ((paper, _quoted), (ours, _claim_value))]
        holds = get(c, "holds")
        mark = '<span class="ok">yes</span>' if holds is True else '<span class="bad">no</span>' if holds is False else "–"
        rows.append([html.escape(str(get(c, "claim") or "–")), *side, mark, fmt(get(c, "note"))])
    return _table(head, rows, "claims", (0, 1, 2, 4))


def _share_cell(x: Any) -> str:
    rate = _real(get(x, "rate"))
    if rate is None:
        return "–" if get(x, "of") is None else f'– <span class="muted">(0/{num(get(x, "of"))})</span>'
    return f'{rate:.3f} <span class="muted">({num(get(x, "hits"))}/{num(get(x, "of"))})</span>'


def diagnosis_html(s: Mapping[str, Any]) -> str:
    variants = get(s, "variants") or {}
    head = ("<tr><th class='l'>variant</th><th>episodes with windows</th><th>coverage</th><th>recall</th>"
            "<th>false reports</th><th>timed right</th><th>acc given report</th></tr>")
    rows = [[html.escape(v), num(get(variants, v, "diagnosis", "episodes_with_windows")),
             *(_share_cell(get(variants, v, "diagnosis", k)) for k in DIAGNOSIS_KEYS)] for v in variants]
    return _table(head, rows, "diagnosis") if rows else '<p class="muted">No variants in summary.json.</p>'


def necessity_html(s: Mapping[str, Any]) -> str:
    variants = get(s, "variants") or {}
    head = ("<tr><th class='l'>variant</th><th class='l'>mode</th><th>acc tool-necessary</th>"
            "<th>acc tool-unnecessary</th><th>gap (unnec. − nec.)</th></tr>")
    rows = []
    for v, block in variants.items():
        for mode, ev in (get(block, "eval") or {}).items():
            nec, unn = _real(get(ev, "acc_necessary", "mean")), _real(get(ev, "acc_unnecessary", "mean"))
            gap = None if nec is None or unn is None else unn - nec
            rows.append([html.escape(v), html.escape(str(mode)), iv_cell(get(ev, "acc_necessary")),
                         iv_cell(get(ev, "acc_unnecessary")), fmt(gap)])
    return _table(head, rows, "necessity", (0, 1)) if rows else '<p class="muted">No eval blocks in summary.json.</p>'


TASK_CHECKS = (("overview_shows_needle", "the n-frame overview shows the needle (share of questions, by n)"),
               ("direct_matches_tools_at_64", "at n = 64 direct answering is as good as tool use"),
               ("direct_near_chance_at_4", "at n = 4 direct answering is near chance"),
               ("direct_above_chance_at_64", "at n = 64 direct answering beats chance (the model can answer)"),
               ("subagent_recall", "the cold start's sub-agent given the needle's window reports it (≥ 30 windows)"),
               # issue 31: the tools pay, and only where the overview misses the needle (task_check.py)
               ("tools_pay_at_4", "the cold start at n = 4: tool use beats answering directly"),
               ("overview_suffices_at_64", "the cold start answers directly at n = 64 better than at n = 4"),
               ("cold_start_kappa", "the cold start's tool calls per τ = 0.7 rollout (paper 2.50)"),
               # issue 27's stage targets (paravt/repro/base_probe.py, task_check.cold_start_checks)
               ("base_clip_recall", "the pretrained base, held-out clips with the needle: described"),
               ("base_clip_timed_right", "the base, held-out clips with the needle: a stated time overlaps it"),
               ("base_clip_false_reports", "the base, held-out clips without the needle: something reported"),
               ("base_overview_mcq_at_64", "the base answers MCQ from a 64-frame overview"),
               ("base_overview_mcq_at_4", "the base at a 4-frame overview is near chance"),
               ("base_overview_open_at_64", "the base names the needle from a 64-frame overview (exact)"),
               ("cold_start_closure", "the strong-prior RL init's closure rates (%, τ = 0.7) vs the paper's Table 5"),
               ("cold_start_tool_code", "the strong-prior RL init reverts to <tool_code> in some rollouts"))


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
    head = "<tr><th class='l'>check</th><th class='l'>measured</th><th class='l'>want</th><th>holds</th></tr>"
    rows = [[html.escape(text), _check_value(get(tc, key, "value")), html.escape(str(get(tc, key, "want") or "")),
             '<span class="ok">yes</span>' if get(tc, key, "holds") else '<span class="bad">no</span>']
            for key, text in TASK_CHECKS if isinstance(get(tc, key), Mapping)]
    ref = get(tc, "reference")
    note = f'<p class="muted">reference checkpoint: {html.escape(str(ref))}</p>' if ref else ""
    return note + _table(head, rows, "task-check", (0, 1, 2))


def meta_html(s: Mapping[str, Any]) -> str:
    meta = get(s, "meta") or {}
    items = [f"<li>{k}: <b>{fmt(get(meta, k), 1)}</b></li>" for k in ("preset", "seeds", "eval_questions", "wall_s")]
    items.append(f"<li>SFT closes &lt;think&gt; without the prefix (τ = 0.7): "
                 f"<b>{fmt(_real(get(s, 'sft_emits_think_without_prefix')))}</b></li>")
    stages = get(meta, "stage_s")
    rows = [[html.escape(str(k)), fmt(_real(v), 1)] for k, v in stages.items()] if isinstance(stages, Mapping) else []
    table = (f"<details><summary>wall seconds per stage ({len(rows)})</summary>"
             + _table("<tr><th class='l'>stage</th><th>s</th></tr>", rows) + "</details>") if rows else ""
    return f"<ul>{''.join(items)}</ul>{table}"


# ---------------------------------------------------------------- figures and the section


def dynamics_html(run: ReproRun) -> str:
    s = run.summary
    cold = {k: m for k in ("f_tau", "kappa") if (m := _real(get(s, "variants", "sft", k, "mean"))) is not None}
    return figure_html(lambda: dynamics_figure(run.logs, cold), "f_tau and kappa per RL step, per variant")


def acc_curves(s: Mapping[str, Any]) -> dict[tuple[str, str], dict[int, Any]]:
    """(variant, mode) → {n: interval} for the variants evaluated in more than one mode (the
    full grid); every variant when none was."""
    variants = get(s, "variants") or {}
    evals = {v: e for v, b in variants.items() if isinstance(e := get(b, "eval"), Mapping)}
    grid = {v: e for v, e in evals.items() if len(e) > 1} or evals
    return {(v, str(m)): {int(n): iv for n, iv in (get(ev, "acc_by_n") or {}).items()
                          if str(n).isdigit() and isinstance(iv, Mapping)}
            for v, e in grid.items() for m, ev in e.items()}


def _guard(make: Callable[[], str], what: str) -> str:
    """``make()``, or a note when the summary's shape is not what it expects."""
    try:
        return make()
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        return f'<p class="muted">{html.escape(what)} could not be rendered: {html.escape(repr(e))}</p>'


def run_html(run: ReproRun) -> str:
    s = run.summary
    parts = [f'<p class="note bad">{html.escape(run.note)}</p>' if run.note else "",
             "<h3>Training dynamics: f<sub>τ</sub> and κ per step (the analogue of the paper's Figure 4)</h3>",
             _guard(lambda: dynamics_html(run), "training dynamics"),
             "<h3>Table 2 layout: format under τ = 0.7 and tool calls</h3>",
             ('<p class="muted">Paper values quoted from the ParaVT paper (Qwen3-VL-8B, real benchmarks), '
              "never measured here; ours: mean [95% interval over seeds] of the last half of the RL steps "
              "(sft: a τ = 0.7 probe), accuracy on held-out ParaVT-Synth with a bootstrap interval over "
              "questions. The paper's VideoMME is a different benchmark: compare orderings, not levels.</p>"),
             _guard(lambda: table2_html(s), "Table 2"),
             "<h3>Table 5 layout: closure rates in raw τ = 0.7 rollouts</h3>",
             _guard(lambda: table5_html(s), "Table 5"),
             "<h3>Accuracy vs n per dispatch mode (the Tool Necessity Gap curve)</h3>",
             _guard(lambda: figure_html(lambda: acc_vs_n_figure(acc_curves(s)), "accuracy vs n per mode"),
                    "accuracy vs n"),
             _guard(lambda: necessity_html(s), "Tool Necessity Gap table"),
             "<h3>The paper's claims</h3>", _guard(lambda: claims_html(s), "claims"),
             "<h3>Parallel pipeline diagnosis</h3>",
             ('<p class="muted">coverage: some window overlaps the needle; recall: overlapping windows whose '
              "sub-agent reports something; false reports: the same on the other windows; timed right: "
              "reports whose stated span overlaps the needle; acc given report: answer accuracy when an "
              "overlapping window reported (docs/repro.md).</p>"),
             _guard(lambda: diagnosis_html(s), "diagnosis"),
             "<h3>Can the method show here? (task check)</h3>", _guard(lambda: task_check_html(s), "task check"),
             "<h3>Run</h3>", _guard(lambda: meta_html(s), "meta")]
    return "\n".join(p for p in parts if p)


def paper_vs_ours_section(run_dirs: Sequence[Path]) -> str | None:
    """The "paper vs ours" section for the repro runs under ``run_dirs``; None when there is none."""
    runs = find_runs(run_dirs)
    if not runs:
        return None
    body = "\n".join((f'<h3 class="run">{html.escape(str(r.path))}</h3>\n' if len(runs) > 1 else
                      f'<p class="muted">{html.escape(str(r.path))}</p>\n') + run_html(r) for r in runs)
    return section("paper-vs-ours", "Paper vs ours (paravt repro)", body)
