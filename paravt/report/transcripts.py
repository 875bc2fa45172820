"""The report's transcripts: a few eval rollouts, each with its crop windows on a timeline of the
video, a contact sheet of each window (when the video is still there) and every turn's text."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from paravt.errors import ParavtError
from paravt.eval.results import ResultRow
from paravt.report.html_parts import (
    esc,
    figure_html as _figure_section,
    img as _img,
    num,
    png_b64 as _png_b64,
)
from paravt.report.run_files import EvalRun
from paravt.rewards.accuracy import parse_interval

THUMB_FRAMES = 8
MAX_WINDOWS_SHOWN = 6


def timeline_figure(row: ResultRow) -> Figure:
    """The video as a bar [0, duration] with each call's window in its own lane (failed calls
    hatched), and for temporal grounding the ground-truth and predicted spans."""
    dur = row.duration or max([c.end or 0.0 for c in row.calls] + [1.0])
    lanes: list[tuple[str, float, float, str, str]] = []
    for i, c in enumerate(row.calls[: MAX_WINDOWS_SHOWN * 2], 1):
        if c.start is not None and c.end is not None:
            lanes.append(
                (
                    f"[{i}]",
                    c.start,
                    c.end,
                    f"C{(i - 1) % 10}" if c.ok else "0.75",
                    "" if c.ok else "//",
                )
            )
    if row.task == "tvg":
        for label, text, color in (
            ("truth", row.answer, "green"),
            ("pred", row.prediction, "orange"),
        ):
            iv = parse_interval(
                text
            )  # the scorer's reading (MM:SS too); a reversed span is not drawn
            if iv and iv[1] > iv[0]:
                lanes.append((label, iv[0], iv[1], color, ""))
    fig = Figure(figsize=(9.0, 0.5 + 0.28 * (len(lanes) + 1)), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    ax.barh(0, dur, left=0, height=0.6, color="0.85")
    for y, (_, a, b, color, hatch) in enumerate(lanes, 1):
        ax.barh(
            y,
            max(b - a, dur / 400),
            left=a,
            height=0.6,
            color=color,
            alpha=0.8,
            hatch=hatch,
            edgecolor="red" if hatch else color,
        )
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


def pick_transcripts(evals: Sequence[EvalRun], n: int) -> list[tuple[str, ResultRow]]:
    """Up to ``n`` rows, round-robin over (run, mode) — modes whose rollouts call tools first —
    preferring rollouts with more calls (up to 4), correct ones first."""
    queues: list[list[tuple[str, ResultRow]]] = []
    for e in evals:
        for mode in sorted({r.mode for r in e.rows}):
            rs = sorted(
                (r for r in e.rows if r.mode == mode),
                key=lambda r: (-min(r.n_calls, 4), not r.correct, r.id),
            )
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


def transcript_html(run: str, row: ResultRow) -> str:
    verdict = '<span class="ok">correct</span>' if row.correct else '<span class="bad">wrong</span>'
    opts = f"<br>options: {esc(' | '.join(row.options))}" if row.options else ""
    parts = [
        f'<div class="card transcript"><h3>{esc(run)} · {esc(row.mode)} · '
        f"{esc(row.id)} ({esc(row.task)}, n={num(row.nframes)})</h3>",
        f"<p>Q: {esc(row.question)}{opts}<br>answer: <b>{esc(row.answer)}</b> · prediction: "
        f"<b>{esc(_clip(str(row.prediction), 200))}</b> · score {num(row.score)} {verdict} · "
        f"{num(row.n_calls)} calls · "
        f"{num(row.tokens.total_input)} input tokens · {num(row.latency_s, 2)} s · end: "
        f"{esc(row.end_reason)}</p>",
        _figure_section(lambda: timeline_figure(row), f"timeline of {row.id}"),
    ]
    overview = (
        _window_sheet_b64(row.video, 0.0, row.duration) if 0 < row.duration < math.inf else None
    )
    if overview:
        parts.append(
            f"<div><b>overview</b> 0.0–{num(row.duration, 1)}s</div>"
            + _img(overview, "overview frames", "sheet")
        )
    for i, c in enumerate(row.calls[:MAX_WINDOWS_SHOWN], 1):
        if c.start is None or c.end is None:
            continue
        status = "" if c.ok else f' <span class="bad">error: {esc(c.error)}</span>'
        parts.append(
            f"<div><b>[{i}] {num(c.start, 1)}–{num(c.end, 1)}s</b>{status} — "
            f"{esc(c.summary[:300])}</div>"
        )
        sheet = _window_sheet_b64(row.video, c.start, c.end) if c.ok else None
        if sheet:
            parts.append(_img(sheet, f"frames of window {i}", "sheet"))
        elif c.ok:
            parts.append('<div class="muted">(no thumbnails: video unavailable)</div>')
    for t in row.transcript:
        cls = re.sub(r"[^a-z]", "", t.role.lower())
        parts.append(
            f'<div class="turn {cls}"><b>{esc(t.role)}:</b> {esc(_clip(t.text, 4000))}</div>'
        )
    parts.append("</div>")
    return "\n".join(parts)
