"""PNG figures and tables of the report: training curves, accuracy by gated n, the eval table.

Figures are built with matplotlib's object API (``Figure``, Agg canvas; no pyplot state), so
they are safe to build from any thread and never open a window.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from paravt.errors import DataError
from paravt.rewards.terms import TERM_NAMES

#: Training-log keys plotted by default, in this order (docs/ARCHITECTURE.md §6; the trainer's
#: train_log.jsonl): ``reward/<term>`` for every term of the reward's registry
#: (``paravt.rewards.terms.TERMS``).
TRAIN_METRICS: tuple[str, ...] = (
    "f_tau",
    "kappa",
    "acc",
    "actor/kl_loss",
    "critic/rewards/mean",
    *(f"reward/{name}" for name in TERM_NAMES),
    "reward/anchor",
    "actor/loss",
    "train/loss",
    "skip_tool_rate",
    "tool_code_rate",
)


def present_metrics(
    logs: Mapping[str, Sequence[Mapping[str, Any]]], keys: Sequence[str] = TRAIN_METRICS
) -> list[str]:
    """The ``keys`` that hold a number in at least one row of at least one log."""
    return [
        k for k in keys if any(_num(row.get(k)) is not None for log in logs.values() for row in log)
    ]


def label(x: Any) -> str:
    """A run or mode name as plain text for matplotlib (a ``$`` would start math text, and a name
    such as ``$\\x$`` fails to draw)."""
    return str(x).replace("$", r"\$")


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def training_curves_figure(
    logs: Mapping[str, Sequence[Mapping[str, Any]]],
    keys: Sequence[str] = TRAIN_METRICS,
    *,
    cols: int = 3,
) -> Figure:
    """One subplot per metric present, one line per run (``logs``: run name → train_log rows)."""
    keys = present_metrics(logs, keys)
    if not keys:
        raise DataError(
            f"none of the metrics {list(TRAIN_METRICS)} appears in the training logs {list(logs)}"
        )
    rows_n = math.ceil(len(keys) / cols)
    fig = Figure(figsize=(4.0 * cols, 2.6 * rows_n), dpi=100)
    for i, key in enumerate(keys):
        ax = fig.add_subplot(rows_n, cols, i + 1)
        for j, (name, log) in enumerate(logs.items()):
            pts = [(row.get("step", n), _num(row.get(key))) for n, row in enumerate(log)]
            pts = [(s, y) for s, y in pts if y is not None and _num(s) is not None]
            if pts:
                xs, ys = zip(*pts)
                ax.plot(
                    xs,
                    ys,
                    "-",
                    marker="." if len(pts) < 30 else None,
                    color=f"C{j}",
                    label=label(name),
                    lw=1.4,
                )
        ax.set_title(key, fontsize=10)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        if i == 0:
            ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def accuracy_by_n_figure(groups: Mapping[str, Mapping[int, float]]) -> Figure:
    """One panel per dispatch mode, one line per run: x = gated n (overview frames, log scale).

    ``groups`` is keyed ``"run · mode"`` (`accuracy_by_n`, `train_accuracy_by_n`). Lines, not bars,
    so nine variants × three modes stay readable; a run keeps its colour in every panel."""
    ns = sorted({n for g in groups.values() for n in g})
    if not ns:
        raise DataError(
            "no accuracy by nframes to plot; the eval rows or train logs hold no nframes"
        )
    panels: dict[str, dict[str, Mapping[int, float]]] = {}
    for key, accs in groups.items():
        run, _, mode = key.rpartition(" · ")
        panels.setdefault(mode or key, {})[run or key] = accs
    runs = list(dict.fromkeys(r for by_run in panels.values() for r in by_run))
    colour = {r: f"C{i % 10}" for i, r in enumerate(runs)}
    style = {r: ("-", "--", ":")[(i // 10) % 3] for i, r in enumerate(runs)}
    legend_rows = math.ceil(len(runs) / 3)
    fig = Figure(figsize=(max(7.0, 3.4 * len(panels)), 3.4 + 0.22 * legend_rows), dpi=100)
    axes = fig.subplots(1, len(panels), squeeze=False, sharey=True)[0]
    for ax, (mode, by_run) in zip(axes, panels.items()):
        for run, accs in by_run.items():
            xs = [n for n in ns if n in accs]
            ax.plot(
                xs,
                [accs[n] for n in xs],
                marker="o",
                ms=4,
                lw=1.4,
                ls=style[run],
                color=colour[run],
                label=label(run),
            )
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.set_title(label(mode), fontsize=10)
        ax.set_xlabel("gated n (overview frames)")
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("accuracy (mean score)")
    handles = [Line2D([], [], color=colour[r], ls=style[r], marker="o", ms=4) for r in runs]
    fig.legend(
        handles,
        [label(r) for r in runs],
        fontsize=8,
        ncols=min(3, len(runs)),
        loc="lower center",
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0.07 * legend_rows + 0.04, 1, 1))
    return fig


def save_png(fig: Figure, out_png: str | Path | BinaryIO) -> None:
    fig.savefig(out_png, format="png")


def training_curves_png(
    logs: Mapping[str, Sequence[Mapping[str, Any]]], out_png: str | Path | BinaryIO
) -> None:
    save_png(training_curves_figure(logs), out_png)


def accuracy_by_n_png(
    groups: Mapping[str, Mapping[int, float]], out_png: str | Path | BinaryIO
) -> None:
    save_png(accuracy_by_n_figure(groups), out_png)


@dataclass(frozen=True)
class EvalTableRow:
    """One line of the eval table: a model/run in one dispatch mode (None = no such rows)."""

    run: str
    mode: str
    n: Any  # an int from compute_metrics; a metrics.json may hold anything (rendered as malformed)
    mcq_acc: float | None
    tvg_miou: float | None
    tvg_r05: float | None
    oe_f1: float | None
    acc_necessary: float | None
    acc_unnecessary: float | None
    calls: float | None
    tokens: float | None  # main + sub input tokens per rollout
    latency_s: float | None
    format_reward: float | None = None  # mean R_fmt (held-out format reward)
    n_failed: Any = 0  # rows whose episode failed: out of n and of every mean (their count)


EVAL_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run", "model / run"),
    ("mode", "mode"),
    ("n", "n"),
    ("n_failed", "failed"),
    ("mcq_acc", "MCQ acc"),
    ("tvg_miou", "mIoU"),
    ("tvg_r05", "R@0.5"),
    ("oe_f1", "F1"),
    ("acc_necessary", "acc tool-nec."),
    ("acc_unnecessary", "acc tool-unnec."),
    ("format_reward", "format R"),
    ("calls", "calls / rollout"),
    ("tokens", "tokens / rollout"),
    ("latency_s", "latency (s)"),
)


def _obj(x: Any) -> Mapping[str, Any]:
    """``x`` when it is a JSON object, else an empty one (a metrics.json may be anything)."""
    return x if isinstance(x, Mapping) else {}


def by_mode(met: Any) -> dict[str, Mapping[str, Any]]:
    """``met["by_mode"]``'s per-mode blocks that are objects (a hand-written or broken metrics.json
    may hold anything there; the cells of what is kept are checked where they are rendered)."""
    return {
        str(m): bd for m, bd in _obj(_obj(met).get("by_mode")).items() if isinstance(bd, Mapping)
    }


def eval_table(metrics_by_run: Mapping[str, Mapping[str, Any]]) -> list[EvalTableRow]:
    """Rows of the eval table from `compute_metrics` outputs (run name → metrics). Values are passed
    on as found: the page renders a non-number where a number belongs as malformed."""
    out = []
    for run, met in metrics_by_run.items():
        for mode, bd in by_mode(met).items():
            s, nec = _obj(bd.get("summary")), _obj(bd.get("by_tool_necessary"))
            out.append(
                EvalTableRow(
                    run=run,
                    mode=mode,
                    n=s.get("n", 0),
                    n_failed=s.get("n_failed", 0),  # metrics.json from before the count: none
                    mcq_acc=s.get("mcq_acc"),
                    tvg_miou=s.get("tvg_miou"),
                    tvg_r05=s.get("tvg_r@0.5"),
                    oe_f1=s.get("oe_f1"),
                    acc_necessary=_obj(nec.get("necessary")).get("score"),
                    acc_unnecessary=_obj(nec.get("unnecessary")).get("score"),
                    calls=s.get("mean_calls"),
                    tokens=_obj(s.get("tokens")).get("total_input"),
                    latency_s=s.get("latency_s"),
                    format_reward=s.get("format_reward"),
                )
            )
    return out


def accuracy_by_n(metrics_by_run: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[int, float]]:
    """``"run · mode"`` → {n: mean score} from `compute_metrics` outputs. `paravt repro` writes one
    eval directory per n (``…/seed0/eval_n4``, ``…/eval_n64``): those are one run's curve, so the
    ``/eval_nN`` suffix is dropped and their points joined."""
    out: dict[str, dict[int, float]] = {}
    for run, met in metrics_by_run.items():
        name = re.sub(r"/eval_n\d+$", "", run)
        for mode, bd in by_mode(met).items():
            accs = {
                int(n): y
                for n, s in _obj(bd.get("by_nframes")).items()
                if str(n).isascii()
                and str(n).isdigit()
                and _obj(s).get("n")
                and (y := _num(_obj(s).get("score"))) is not None
            }
            if accs:
                out.setdefault(f"{name} · {mode}", {}).update(accs)
    return out


def train_accuracy_by_n(
    logs: Mapping[str, Sequence[Mapping[str, Any]]], last: int = 20
) -> dict[str, dict[int, float]]:
    """Training accuracy by gated n: mean of each run's ``acc/n/<n>`` over its last ``last`` logged
    values."""
    out: dict[str, dict[int, float]] = {}
    for run, log in logs.items():
        accs: dict[int, float] = {}
        keys = {k for row in log for k in row if k.startswith("acc/n/") and k[6:].isdigit()}
        for k in keys:
            vals = [v for row in log if (v := _num(row.get(k))) is not None][-last:]
            if vals:
                accs[int(k[6:])] = float(np.mean(vals))
        if accs:
            out[f"{run} · train"] = accs
    return out
