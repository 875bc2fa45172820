"""One self-contained HTML report of training and eval runs (docs/ARCHITECTURE.md §1 `eval/`).

`build_report` finds, under each given directory (recursively), training runs (``run.json``
and/or ``train_log.jsonl``) and eval runs (``results.jsonl``, with ``metrics.json`` as fallback;
``paravt.report.run_files``), and writes a single ``report.html``: training curves, the eval
table of modes, accuracy by gated
n, tokens against K, and a few transcripts with their crop windows on a timeline of the video and
a contact sheet of each window (``paravt.report.transcripts``). Every image is an inline base64 PNG;
there is no external CSS,
JS or font, so the file can be mailed or archived alone. A missing video only drops thumbnails.

Hostile or broken run files (issue 34): every value is escaped or formatted from its typed value
(`paravt.report.html_parts`); a row off the schema is listed as malformed with its reason and the
rest is rendered; an unreadable ``run.json`` / ``metrics.json`` is a note on its run.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from paravt.errors import DataError
from paravt.eval.benchmarks.table1 import table1_rows
from paravt.jsonl import write_atomic
from paravt.report import plots
from paravt.report.html_parts import esc, figure_html as _figure_section, num, section as _section
from paravt.report.paper_vs_ours import paper_vs_ours_section
from paravt.report.rollouts import rollouts_html
from paravt.report.run_files import Discovered, EvalRun, discover
from paravt.report.table1 import table1_html
from paravt.report.tokens_figure import tokens_vs_k_figure
from paravt.report.transcripts import pick_transcripts, transcript_html
from paravt.rl.rollouts import read_rollouts

N_TRANSCRIPTS = 4


# ---------------------------------------------------------------- html

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;
max-width:1200px;color:#222;line-height:1.4}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}
h3{font-size:14px;margin:18px 0 6px}
table{border-collapse:collapse;font-size:12px}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f0f0f0}td.l,th.l{text-align:left}.muted{color:#888}
img.fig{max-width:100%;border:1px solid #eee}
img.sheet{max-width:100%;display:block;margin:2px 0 8px}
.turn{border-left:3px solid #bbb;margin:4px 0;padding:2px 8px;white-space:pre-wrap;
font:12px monospace;overflow-wrap:anywhere}.card p{overflow-wrap:anywhere}
.turn.assistant{border-color:#3b7dd8}.turn.tool{border-color:#d89b3b}.turn.user{border-color:#888}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 14px;margin:14px 0}
.ok{color:#1a7f37}.bad{color:#c62828}
#paper-vs-ours table{margin:6px 0 10px}#paper-vs-ours td{white-space:nowrap}
#paper-vs-ours table.claims td{white-space:normal}
"""


def _eval_table_html(evals: Sequence[EvalRun]) -> str:
    rows = plots.eval_table({e.name: e.metrics for e in evals})
    if not rows:
        return '<p class="muted">No eval runs found.</p>'
    head = "".join(
        f'<th class="{"l" if k in ("run", "mode") else ""}">{html.escape(t)}</th>'
        for k, t in plots.EVAL_COLUMNS
    )
    body = []
    for r in rows:
        cells = []
        for k, _ in plots.EVAL_COLUMNS:
            v = getattr(r, k)
            digits = 0 if k == "tokens" else 2 if k in ("calls", "latency_s") else 3
            text = esc(v) if k in ("run", "mode") else num(v, digits)
            cells.append(f'<td class="{"l" if k in ("run", "mode") else ""}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<table id="eval-table"><tr>{head}</tr>{"".join(body)}</table>{_malformed_html(evals)}'
        f"{_necessity_table_html(evals)}"
    )


def _malformed_html(evals: Sequence[EvalRun], shown: int = 5) -> str:
    """The eval rows set aside as malformed, per run (the first few reasons; the count of all)."""
    items = "".join(
        f"<li><b>{esc(e.name)}</b>: {len(e.malformed)} malformed — "
        + "; ".join(esc(m) for m in e.malformed[:shown])
        + ("; …" if len(e.malformed) > shown else "")
        + "</li>"
        for e in evals
        if e.malformed
    )
    return (
        '<div class="bad" id="malformed-rows"><p>Rows not shown '
        f"(malformed):</p><ul>{items}</ul></div>"
        if items
        else ""
    )


def _necessity_table_html(evals: Sequence[EvalRun]) -> str:
    """Tool Necessity Gap as a table: a row per run, a column per dispatch mode (empty: none
    measured)."""
    gaps = {
        (e.name, str(m)): bd["tool_necessity_gap"]
        for e in evals
        for m, bd in plots.by_mode(e.metrics).items()
        if bd.get("tool_necessity_gap") is not None
    }
    if not gaps:
        return ""
    modes = sorted({m for _, m in gaps})
    runs = list(dict.fromkeys(r for r, _ in gaps))
    head = '<th class="l">run</th>' + "".join(f"<th>{esc(m)}</th>" for m in modes)
    body = "".join(
        '<tr><td class="l">'
        + esc(r)
        + "</td>"
        + "".join(f"<td>{num(gaps.get((r, m)))}</td>" for m in modes)
        + "</tr>"
        for r in runs
    )
    return (
        '<h3>Tool Necessity Gap</h3><p class="muted">score on tool-unnecessary − tool-necessary '
        "prompts, "
        f'per run and dispatch mode</p><table id="necessity-gap"><tr>{head}</tr>{body}</table>'
    )


def _runs_html(items: str, n: int, fold_above: int = 12) -> str:
    """The list of runs, folded when long (a repro directory holds dozens)."""
    body = f"<ul>{items or '<li>none found</li>'}</ul>"
    return body if n <= fold_above else f"<details><summary>{n} runs</summary>{body}</details>"


def _runs_list_html(found: Discovered) -> str:
    """Every run found, training runs first, each with its path (and a note or malformed count)."""
    items = "".join(
        f"<li>train ({esc(t.kind)}): <b>{esc(t.name)}</b> — {len(t.log)} steps "
        f"<span class='muted'>{esc(t.path)}</span>"
        + (f" <span class='bad'>{esc(t.note)}</span>" if t.note else "")
        + "</li>"
        for t in found.train
    )
    items += "".join(
        f"<li>eval: <b>{esc(e.name)}</b> — {len(e.rows)} rollouts "
        + (f"<span class='bad'>({len(e.malformed)} malformed)</span> " if e.malformed else "")
        + f"<span class='muted'>{esc(e.path)}</span></li>"
        for e in found.evals
    )
    return _runs_html(items, len(found.train) + len(found.evals))


def _training_html(found: Discovered) -> str:
    """The training curves: RL and SFT runs differ in length by 10-100x, so each on its own axes."""
    rl_logs = {t.name: t.log for t in found.train if t.log and t.kind != "sft"}
    sft_logs = {t.name: t.log for t in found.train if t.log and t.kind == "sft"}
    curves = "".join(
        _figure_section(partial(plots.training_curves_figure, lg), alt)
        for lg, alt in ((rl_logs, "RL training curves"), (sft_logs, "SFT training curves"))
        if lg
    )
    return curves or '<p class="muted">No training logs found.</p>'


def render_html(
    found: Discovered, *, n_transcripts: int = N_TRANSCRIPTS, paper_vs_ours: str | None = None
) -> str:
    """The report page for already discovered runs (``paper_vs_ours``: that section's HTML, for
    `paravt repro` directories, shown after the run list)."""
    logs = {t.name: t.log for t in found.train if t.log}
    mets = {e.name: e.metrics for e in found.evals if e.metrics}
    all_rows = [r for e in found.evals for r in e.rows]
    by_n = plots.accuracy_by_n(mets) or plots.train_accuracy_by_n(logs)
    sections = [
        _section("runs", "Runs", _runs_list_html(found)),
        *([paper_vs_ours] if paper_vs_ours else []),
        _section("training", "Training curves", _training_html(found)),
        _section("eval", "Eval table of modes", _eval_table_html(found.evals)),
        _section(
            "table1",
            "Benchmarks beside the paper's Table 1",
            table1_html(table1_rows([e.path / "metrics.json" for e in found.evals])),
        ),
        _section(
            "acc-by-n",
            "Accuracy by gated n",
            _figure_section(lambda: plots.accuracy_by_n_figure(by_n), "accuracy by n"),
        ),
        _section(
            "tokens",
            "Input tokens per rollout vs K (docs/ARCHITECTURE.md §7)",
            _figure_section(lambda: tokens_vs_k_figure(all_rows), "tokens vs K")
            if all_rows
            else '<p class="muted">No eval rows found.</p>',
        ),
        _section(
            "rollouts",
            "Rollouts during RL (raw, as the paper's Appendix D)",
            rollouts_html([(t.name, read_rollouts(t.path)) for t in found.train if t.kind == "rl"]),
        ),
        _section(
            "transcripts",
            "Transcripts",
            "\n".join(
                transcript_html(n, r) for n, r in pick_transcripts(found.evals, n_transcripts)
            )
            or '<p class="muted">No eval rows found.</p>',
        ),
    ]
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>paravt report</title>'
        f"<style>{_CSS}</style></head><body><h1>paravt report</h1><p class='muted'>generated "
        f"{stamp}</p>\n" + "\n".join(sections) + "\n</body></html>\n"
    )


def build_report(run_dirs: Sequence[Path], out: Path) -> Path:
    """Write the report of every run under ``run_dirs`` to ``out`` (one HTML file); returns
    ``out``."""
    found = discover(run_dirs)
    if not found.train and not found.evals:
        raise DataError(
            f"no run.json, train_log.jsonl or results.jsonl under {[str(p) for p in run_dirs]}; "
            "pass a directory written by paravt train or paravt eval"
        )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(
        out, render_html(found, paper_vs_ours=paper_vs_ours_section(run_dirs)), "the report"
    )
    return out
