"""One self-contained HTML report of training and eval runs (docs/ARCHITECTURE.md §1 `eval/`).

`build_report` finds, under each given directory (recursively), training runs (``run.json``
and/or ``train_log.jsonl``) and eval runs (``results.jsonl``, with ``metrics.json`` as fallback),
and writes a single ``report.html``: training curves, the eval table of modes, accuracy by gated
n, tokens against K, and a few transcripts with their crop windows on a timeline of the video and
a contact sheet of each window. Every image is an inline base64 PNG; there is no external CSS,
JS or font, so the file can be mailed or archived alone. A missing video only drops thumbnails.

Hostile or broken run files (issue 34): every value is escaped or formatted from its typed value
(`paravt.eval.html_parts`); a row off the schema is listed as malformed with its reason and the
rest is rendered; an unreadable ``run.json`` / ``metrics.json`` is a note on its run.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from paravt.errors import DataError, ParavtError
from paravt.eval import plots
from paravt.eval.benchmarks.table1 import table1_html, table1_rows
from paravt.eval.html_parts import esc, num
from paravt.eval.html_parts import img as _img
from paravt.eval.html_parts import png_b64 as _png_b64
from paravt.eval.html_parts import figure_html as _figure_section
from paravt.eval.html_parts import section as _section
from paravt.eval.metrics import compute_metrics
from paravt.eval.paper_vs_ours import paper_vs_ours_section
from paravt.eval.results import ResultRow, read_results
from paravt.eval.rollouts import read_rollouts, rollouts_html
from paravt.eval.tokens import tokens_vs_k_figure
from paravt.jsonl import read_jsonl, write_atomic
from paravt.rewards.accuracy import parse_interval

N_TRANSCRIPTS = 4
THUMB_FRAMES = 8
MAX_WINDOWS_SHOWN = 6


@dataclass(frozen=True)
class TrainRun:
    name: str
    path: Path
    kind: str
    log: tuple[dict[str, Any], ...]
    note: str | None = None  # why run.json was not read (shown on the run)


@dataclass(frozen=True)
class EvalRun:
    name: str
    path: Path
    rows: tuple[ResultRow, ...]
    metrics: dict[str, Any]
    malformed: tuple[str, ...] = ()  # results.jsonl rows off the schema, and why (shown, not raised)


@dataclass(frozen=True)
class Discovered:
    train: tuple[TrainRun, ...]
    evals: tuple[EvalRun, ...]


def _label(d: Path, root: Path) -> str:
    rel = d.relative_to(root)
    return root.name if rel == Path(".") else f"{root.name}/{rel.as_posix()}"


def _json_object(path: Path) -> tuple[dict[str, Any], str | None]:
    """``path``'s JSON object, or ({}, why not) when it is missing a whole object."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError) as e:
        return {}, f"{path} could not be read ({e})"
    return (obj, None) if isinstance(obj, dict) else ({}, f"{path} is not a JSON object")


def _train_run(d: Path, root: Path) -> TrainRun:
    meta, note = _json_object(d / "run.json") if (d / "run.json").exists() else ({}, None)
    name = str(meta.get("name") or _label(d, root))
    return TrainRun(name, d, str(meta.get("kind", "?")), tuple(read_jsonl(d / "train_log.jsonl")), note)


def _eval_run(d: Path, root: Path) -> EvalRun:
    read = read_results(d / "results.jsonl")
    malformed = read.malformed
    if read.rows:
        met = compute_metrics(list(read.rows))
    else:
        met, note = _json_object(d / "metrics.json") if (d / "metrics.json").exists() else ({}, None)
        malformed += (note,) if note else ()
    parent_meta = d.parent / "run.json"
    name = _label(d, root)
    if parent_meta.exists() and d != root:
        name = f"{_json_object(parent_meta)[0].get('name', d.parent.name)}/{d.name}"
    return EvalRun(name, d, read.rows, met, malformed)


def _unique(names: list[str], paths: list[Path]) -> list[str]:
    """Each run's name, or where names repeat (every RL seed of `paravt repro` is "seed0") its
    path under the common root; a number only when even those repeat."""
    counts = {n: names.count(n) for n in names}
    root = Path(os.path.commonpath([str(p) for p in paths])) if len(paths) > 1 else None
    picked = [n if counts[n] == 1 or root is None else p.relative_to(root).as_posix() or n
              for n, p in zip(names, paths)]
    seen: dict[str, int] = {}
    out = []
    for n in picked:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n} ({seen[n]})")
    return out


def discover(run_dirs: Sequence[Path]) -> Discovered:
    """Training and eval runs under ``run_dirs`` (searched recursively, each dir once)."""
    train, evals = [], []
    seen: set[Path] = set()
    for root in (Path(p).resolve() for p in run_dirs):
        if not root.is_dir():
            raise DataError(f"run directory {root} does not exist; pass a directory written by paravt train/eval")
        dirs = sorted({p.parent for pat in ("run.json", "train_log.jsonl", "results.jsonl", "metrics.json")
                       for p in root.rglob(pat)})
        for d in dirs:
            if d in seen:
                continue
            seen.add(d)
            if (d / "run.json").exists() or (d / "train_log.jsonl").exists():
                train.append(_train_run(d, root))
            if (d / "results.jsonl").exists() or (d / "metrics.json").exists():
                evals.append(_eval_run(d, root))
    tn = _unique([t.name for t in train], [t.path for t in train])
    en = _unique([e.name for e in evals], [e.path for e in evals])
    return Discovered(tuple(replace(t, name=n) for n, t in zip(tn, train)),
                      tuple(replace(e, name=n) for n, e in zip(en, evals)))


# ---------------------------------------------------------------- images

def timeline_figure(row: ResultRow) -> Figure:
    """The video as a bar [0, duration] with each call's window in its own lane (failed calls
    hatched), and for temporal grounding the ground-truth and predicted spans."""
    dur = row.duration or max([c.end or 0.0 for c in row.calls] + [1.0])
    lanes: list[tuple[str, float, float, str, str]] = []
    for i, c in enumerate(row.calls[:MAX_WINDOWS_SHOWN * 2], 1):
        if c.start is not None and c.end is not None:
            lanes.append((f"[{i}]", c.start, c.end, f"C{(i - 1) % 10}" if c.ok else "0.75", "" if c.ok else "//"))
    if row.task == "tvg":
        for label, text, color in (("truth", row.answer, "green"), ("pred", row.prediction, "orange")):
            iv = parse_interval(text)  # the scorer's reading (MM:SS too); a reversed span is not drawn
            if iv and iv[1] > iv[0]:
                lanes.append((label, iv[0], iv[1], color, ""))
    fig = Figure(figsize=(9.0, 0.5 + 0.28 * (len(lanes) + 1)), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    ax.barh(0, dur, left=0, height=0.6, color="0.85")
    for y, (label, a, b, color, hatch) in enumerate(lanes, 1):
        ax.barh(y, max(b - a, dur / 400), left=a, height=0.6, color=color, alpha=0.8, hatch=hatch,
                edgecolor="red" if hatch else color)
        ax.text(min(b, dur) + dur / 200, y, f"{a:.1f}–{b:.1f}s", va="center", fontsize=7)
    ax.set_yticks(range(len(lanes) + 1), ["video"] + [lane[0] for lane in lanes], fontsize=7)
    ax.set_ylim(len(lanes) + 0.6, -0.6)
    ax.set_xlim(0, dur * 1.12)
    ax.set_xlabel("seconds", fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    return fig


def _window_sheet_b64(video: str, start: float, end: float) -> str | None:
    """Contact sheet of ``THUMB_FRAMES`` frames of [start, end], or None when the video (or the
    video layer) is unavailable."""
    if not video or not Path(video).exists():
        return None
    try:
        from paravt.video import sample_frames
        from paravt.video.sheet import contact_sheet
    except ImportError:
        return None
    try:
        frames = sample_frames(video, start=start, end=end, nframes=THUMB_FRAMES)
        return _png_b64(contact_sheet(frames, cols=8, thumb_width=160))
    except ParavtError:
        return None


# ---------------------------------------------------------------- html

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1200px;
color:#222;line-height:1.4}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}
h3{font-size:14px;margin:18px 0 6px}
table{border-collapse:collapse;font-size:12px}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f0f0f0}td.l,th.l{text-align:left}.muted{color:#888}
img.fig{max-width:100%;border:1px solid #eee}img.sheet{max-width:100%;display:block;margin:2px 0 8px}
.turn{border-left:3px solid #bbb;margin:4px 0;padding:2px 8px;white-space:pre-wrap;font:12px monospace;
overflow-wrap:anywhere}.card p{overflow-wrap:anywhere}
.turn.assistant{border-color:#3b7dd8}.turn.tool{border-color:#d89b3b}.turn.user{border-color:#888}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 14px;margin:14px 0}
.ok{color:#1a7f37}.bad{color:#c62828}
#paper-vs-ours table{margin:6px 0 10px}#paper-vs-ours td{white-space:nowrap}#paper-vs-ours table.claims td{white-space:normal}
"""


def _eval_table_html(evals: Sequence[EvalRun]) -> str:
    rows = plots.eval_table({e.name: e.metrics for e in evals})
    if not rows:
        return '<p class="muted">No eval runs found.</p>'
    head = "".join(f'<th class="{"l" if k in ("run", "mode") else ""}">{html.escape(t)}</th>'
                   for k, t in plots.EVAL_COLUMNS)
    body = []
    for r in rows:
        cells = []
        for k, _ in plots.EVAL_COLUMNS:
            v = getattr(r, k)
            digits = 0 if k == "tokens" else 2 if k in ("calls", "latency_s") else 3
            text = esc(v) if k in ("run", "mode") else num(v, digits)
            cells.append(f'<td class="{"l" if k in ("run", "mode") else ""}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table id="eval-table"><tr>{head}</tr>{"".join(body)}</table>{_malformed_html(evals)}'
            f"{_necessity_table_html(evals)}")


def _malformed_html(evals: Sequence[EvalRun], shown: int = 5) -> str:
    """The eval rows set aside as malformed, per run (the first few reasons; the count of all)."""
    items = "".join(f"<li><b>{esc(e.name)}</b>: {len(e.malformed)} malformed — "
                    + "; ".join(esc(m) for m in e.malformed[:shown]) + ("; …" if len(e.malformed) > shown else "")
                    + "</li>" for e in evals if e.malformed)
    return f'<div class="bad" id="malformed-rows"><p>Rows not shown (malformed):</p><ul>{items}</ul></div>' if items else ""


def _necessity_table_html(evals: Sequence[EvalRun]) -> str:
    """Tool Necessity Gap as a table: a row per run, a column per dispatch mode (empty: none measured)."""
    gaps = {(e.name, str(m)): bd["tool_necessity_gap"] for e in evals for m, bd in plots.by_mode(e.metrics).items()
            if bd.get("tool_necessity_gap") is not None}
    if not gaps:
        return ""
    modes = sorted({m for _, m in gaps})
    runs = list(dict.fromkeys(r for r, _ in gaps))
    head = '<th class="l">run</th>' + "".join(f"<th>{esc(m)}</th>" for m in modes)
    body = "".join('<tr><td class="l">' + esc(r) + "</td>"
                   + "".join(f"<td>{num(gaps.get((r, m)))}</td>" for m in modes) + "</tr>" for r in runs)
    return ('<h3>Tool Necessity Gap</h3><p class="muted">score on tool-unnecessary − tool-necessary prompts, '
            f'per run and dispatch mode</p><table id="necessity-gap"><tr>{head}</tr>{body}</table>')


def _pick_transcripts(evals: Sequence[EvalRun], n: int) -> list[tuple[str, ResultRow]]:
    """Up to ``n`` rows, round-robin over (run, mode) — modes whose rollouts call tools first —
    preferring rollouts with more calls (up to 4), correct ones first."""
    queues: list[list[tuple[str, ResultRow]]] = []
    for e in evals:
        for mode in sorted({r.mode for r in e.rows}):
            rs = sorted((r for r in e.rows if r.mode == mode), key=lambda r: (-min(r.n_calls, 4), not r.correct, r.id))
            queues.append([(e.name, r) for r in rs])
    queues.sort(key=lambda q: -min(q[0][1].n_calls, 4))  # stable: keeps run order within a tie
    out: list[tuple[str, ResultRow]] = []
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop(0))
    return out


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + f"… (+{len(text) - n} chars)"


def _transcript_html(run: str, row: ResultRow) -> str:
    verdict = '<span class="ok">correct</span>' if row.correct else '<span class="bad">wrong</span>'
    opts = f"<br>options: {esc(' | '.join(row.options))}" if row.options else ""
    parts = [
        f'<div class="card transcript"><h3>{esc(run)} · {esc(row.mode)} · '
        f"{esc(row.id)} ({esc(row.task)}, n={num(row.nframes)})</h3>",
        f"<p>Q: {esc(row.question)}{opts}<br>answer: <b>{esc(row.answer)}</b> · prediction: "
        f"<b>{esc(_clip(str(row.prediction), 200))}</b> · score {num(row.score)} {verdict} · {num(row.n_calls)} calls · "
        f"{num(row.tokens.total_input)} input tokens · {num(row.latency_s, 2)} s · end: {esc(row.end_reason)}</p>",
        _figure_section(lambda: timeline_figure(row), f"timeline of {row.id}"),
    ]
    overview = _window_sheet_b64(row.video, 0.0, row.duration) if 0 < row.duration < math.inf else None
    if overview:
        parts.append(f"<div><b>overview</b> 0.0–{num(row.duration, 1)}s</div>" + _img(overview, "overview frames", "sheet"))
    for i, c in enumerate(row.calls[:MAX_WINDOWS_SHOWN], 1):
        if c.start is None or c.end is None:
            continue
        status = "" if c.ok else f' <span class="bad">error: {esc(c.error)}</span>'
        parts.append(f"<div><b>[{i}] {num(c.start, 1)}–{num(c.end, 1)}s</b>{status} — {esc(c.summary[:300])}</div>")
        sheet = _window_sheet_b64(row.video, c.start, c.end) if c.ok else None
        if sheet:
            parts.append(_img(sheet, f"frames of window {i}", "sheet"))
        elif c.ok:
            parts.append('<div class="muted">(no thumbnails: video unavailable)</div>')
    for t in row.transcript:
        cls = re.sub(r"[^a-z]", "", t.role.lower())
        parts.append(f'<div class="turn {cls}"><b>{esc(t.role)}:</b> {esc(_clip(t.text, 4000))}</div>')
    parts.append("</div>")
    return "\n".join(parts)


def _runs_html(items: str, n: int, fold_above: int = 12) -> str:
    """The list of runs, folded when long (a repro directory holds dozens)."""
    body = f"<ul>{items or '<li>none found</li>'}</ul>"
    return body if n <= fold_above else f"<details><summary>{n} runs</summary>{body}</details>"


def render_html(found: Discovered, *, n_transcripts: int = N_TRANSCRIPTS, paper_vs_ours: str | None = None) -> str:
    """The report page for already discovered runs (``paper_vs_ours``: that section's HTML, for
    `paravt repro` directories, shown after the run list)."""
    logs = {t.name: t.log for t in found.train if t.log}
    # RL and SFT runs differ in length by 10-100x: plot them on their own axes
    rl_logs = {t.name: t.log for t in found.train if t.log and t.kind != "sft"}
    sft_logs = {t.name: t.log for t in found.train if t.log and t.kind == "sft"}
    curves = "".join(_figure_section(lambda lg=lg: plots.training_curves_figure(lg), alt)
                     for lg, alt in ((rl_logs, "RL training curves"), (sft_logs, "SFT training curves")) if lg)
    mets = {e.name: e.metrics for e in found.evals if e.metrics}
    all_rows = [r for e in found.evals for r in e.rows]
    runs_list = "".join(f"<li>train ({esc(t.kind)}): <b>{esc(t.name)}</b> — {len(t.log)} steps "
                        f"<span class='muted'>{esc(t.path)}</span>"
                        + (f" <span class='bad'>{esc(t.note)}</span>" if t.note else "") + "</li>" for t in found.train)
    runs_list += "".join(f"<li>eval: <b>{esc(e.name)}</b> — {len(e.rows)} rollouts "
                         + (f"<span class='bad'>({len(e.malformed)} malformed)</span> " if e.malformed else "")
                         + f"<span class='muted'>{esc(e.path)}</span></li>" for e in found.evals)
    by_n = plots.accuracy_by_n(mets) or plots.train_accuracy_by_n(logs)
    sections = [
        _section("runs", "Runs", _runs_html(runs_list, len(found.train) + len(found.evals))),
        *([paper_vs_ours] if paper_vs_ours else []),
        _section("training", "Training curves", curves or '<p class="muted">No training logs found.</p>'),
        _section("eval", "Eval table of modes", _eval_table_html(found.evals)),
        _section("table1", "Benchmarks beside the paper's Table 1",
                 table1_html(table1_rows([e.path / "metrics.json" for e in found.evals]))),
        _section("acc-by-n", "Accuracy by gated n", _figure_section(lambda: plots.accuracy_by_n_figure(by_n), "accuracy by n")),
        _section("tokens", "Input tokens per rollout vs K (docs/ARCHITECTURE.md §7)",
                 _figure_section(lambda: tokens_vs_k_figure(all_rows), "tokens vs K") if all_rows
                 else '<p class="muted">No eval rows found.</p>'),
        _section("rollouts", "Rollouts during RL (raw, as the paper's Appendix D)",
                 rollouts_html([(t.name, read_rollouts(t.path)) for t in found.train if t.kind == "rl"])),
        _section("transcripts", "Transcripts", "\n".join(_transcript_html(n, r) for n, r in
                                                          _pick_transcripts(found.evals, n_transcripts))
                 or '<p class="muted">No eval rows found.</p>'),
    ]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>paravt report</title>'
            f"<style>{_CSS}</style></head><body><h1>paravt report</h1><p class='muted'>generated {stamp}</p>\n"
            + "\n".join(sections) + "\n</body></html>\n")


def build_report(run_dirs: Sequence[Path], out: Path) -> Path:
    """Write the report of every run under ``run_dirs`` to ``out`` (one HTML file); returns ``out``."""
    found = discover(run_dirs)
    if not found.train and not found.evals:
        raise DataError(f"no run.json, train_log.jsonl or results.jsonl under {[str(p) for p in run_dirs]}; "
                        "pass a directory written by paravt train or paravt eval")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, render_html(found, paper_vs_ours=paper_vs_ours_section(run_dirs)), "the report")
    return out
