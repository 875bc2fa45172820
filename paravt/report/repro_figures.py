"""Figures of the report's "paper vs ours" section: training dynamics over seeds (the analogue of
the paper's Figure 4) and accuracy vs overview budget n per dispatch mode (the Tool Necessity Gap
curve). Pure data → matplotlib ``Figure`` (object API, no pyplot state)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure

from paravt.errors import DataError
from paravt.report.plots import label

DYNAMICS_KEYS = ("f_tau", "kappa")
_MODE_STYLE = {"parallel": "-", "sequential": "--", "none": ":"}


@dataclass(frozen=True)
class Band:
    """One metric per RL step over seeds: mean and min–max band; ``n`` = seeds with a value."""

    steps: tuple[float, ...]
    mean: tuple[float, ...]
    lo: tuple[float, ...]
    hi: tuple[float, ...]
    n: tuple[int, ...]


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def _num_or(x: Any, default: float) -> float:
    """``x`` as a finite float, else ``default``."""
    n = _num(x)
    return default if n is None else n


def _by_step(log: Sequence[Mapping[str, Any]], key: str) -> dict[float, float]:
    """step → value of one seed's log (the row's ``step``, else its 1-based position; a step
    logged twice, as after a resume, keeps its last value)."""
    out: dict[float, float] = {}
    for i, row in enumerate(log, 1):
        y, step = _num(row.get(key)), _num(row.get("step"))
        if y is not None:
            out[float(i) if step is None else step] = y
    return out


def seed_band(logs: Sequence[Sequence[Mapping[str, Any]]], key: str) -> Band:
    """Mean, min and max of ``key`` at every step any seed logged; a step only some seeds reached
    (runs of unequal length) is aggregated over those seeds, and ``n`` says how many."""
    per_seed = [_by_step(log, key) for log in logs]
    steps = sorted({s for d in per_seed for s in d})
    vals = [[d[s] for d in per_seed if s in d] for s in steps]
    return Band(
        tuple(steps),
        tuple(sum(v) / len(v) for v in vals),
        tuple(min(v) for v in vals),
        tuple(max(v) for v in vals),
        tuple(len(v) for v in vals),
    )


def dynamics_figure(
    runs: Mapping[str, Sequence[Sequence[Mapping[str, Any]]]],
    cold_start: Mapping[str, float] | None = None,
    keys: Sequence[str] = DYNAMICS_KEYS,
) -> Figure:
    """One panel per metric, one line per variant (mean over its seeds' logs, shaded min–max
    band where ≥ 2 seeds logged the step); ``cold_start`` values drawn as a dotted reference."""
    bands = {v: {k: seed_band(logs, k) for k in keys} for v, logs in runs.items()}
    if not any(b.steps for per in bands.values() for b in per.values()):
        raise DataError(
            f"no {'/'.join(keys)} per step in the RL train logs of {sorted(runs) or 'any variant'}"
        )
    fig = Figure(figsize=(12.0, 3.6), dpi=100)
    for i, key in enumerate(keys):
        ax = fig.add_subplot(1, len(keys), i + 1)
        for j, (variant, per) in enumerate(bands.items()):
            b = per[key]
            if not b.steps:
                continue
            seeds = max(b.n)
            ax.plot(
                b.steps,
                b.mean,
                "-",
                color=f"C{j % 10}",
                lw=1.5,
                marker="." if len(b.steps) < 30 else None,
                label=label(f"{variant} ({seeds} seed{'s' if seeds != 1 else ''})"),
            )
            if seeds >= 2:
                ax.fill_between(b.steps, b.lo, b.hi, color=f"C{j % 10}", alpha=0.18, lw=0)
        ref = (cold_start or {}).get(key)
        if ref is not None:
            ax.axhline(ref, color="0.3", ls=":", lw=1.2, label="sft cold start (probe)")
        ax.set_title(f"{key} per RL step (mean, band = min–max over seeds)", fontsize=9)
        ax.set_xlabel("RL step", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    fig.axes[0].legend(
        fontsize=7, loc="upper center", bbox_to_anchor=(1.1, -0.18), ncols=4, frameon=False
    )
    fig.tight_layout()
    return fig


def acc_vs_n_figure(curves: Mapping[tuple[str, str], Mapping[int, Mapping[str, Any]]]) -> Figure:
    """Accuracy vs gated n, one line per (variant, mode): colour = variant, line style = mode;
    error bars = the summary's 95% interval (bootstrap over questions) where it has one."""
    curves = {
        k: c
        for k, c in curves.items()
        if any(_num(iv.get("mean")) is not None for iv in c.values())
    }
    if not curves:
        raise DataError("no accuracy by n in the summary's eval blocks")
    variants = list(dict.fromkeys(v for v, _ in curves))
    fig = Figure(figsize=(8.0, 4.2), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    ns: set[int] = set()
    for (variant, mode), by_n in curves.items():
        pts = sorted((n, iv) for n, iv in by_n.items() if _num(iv.get("mean")) is not None)
        xs = [n for n, _ in pts]
        ys = [float(iv["mean"]) for _, iv in pts]
        err = [
            [y - _num_or(iv.get("lo"), y) for y, (_, iv) in zip(ys, pts)],
            [_num_or(iv.get("hi"), y) - y for y, (_, iv) in zip(ys, pts)],
        ]
        ns.update(xs)
        ax.errorbar(
            xs,
            ys,
            yerr=err,
            ls=_MODE_STYLE.get(mode, "-."),
            marker="o",
            ms=4,
            capsize=3,
            lw=1.4,
            color=f"C{variants.index(variant) % 10}",
            label=label(f"{variant} · {mode}"),
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(ns), [str(n) for n in sorted(ns)])
    ax.set_xlabel("gated n (overview frames)")
    ax.set_ylabel("accuracy (mean score)")
    ax.set_ylim(-0.02, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    return fig


_PATH_COLOURS = {"executed": "C2", "written_not_run": "C1", "direct": "C0", "broken": "C3"}


def paths_figure(by_path: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> Figure:
    """The reward-by-path probe of the RL init (``repro.paths``): per (variant, n) cell, each
    path's share of the rollouts (left) and its mean reward with its bootstrap interval (right)."""
    from paravt.rewards.metrics import PATHS

    cells = [
        (f"{v} n={n}", t)
        for v, by_n in by_path.items()
        for n, t in by_n.items()
        if isinstance(t, Mapping) and t.get("n")
    ]
    if not cells:
        raise DataError("no reward-by-path table in the summary")
    fig = Figure(figsize=(9.0, 3.8), dpi=100)
    share_ax, reward_ax = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    width = 0.8 / len(PATHS)
    for j, p in enumerate(PATHS):
        xs = [i + (j - (len(PATHS) - 1) / 2) * width for i in range(len(cells))]
        share_ax.bar(
            xs,
            [float(t["paths"][p]["share"]) for _, t in cells],
            width,
            color=_PATH_COLOURS[p],
            label=p,
        )
        pts = [(x, t["paths"][p]["reward"]) for x, (_, t) in zip(xs, cells)]
        pts = [(x, iv) for x, iv in pts if iv and _num(iv.get("mean")) is not None]
        if pts:
            ys = [float(iv["mean"]) for _, iv in pts]
            err = [
                [y - _num_or(iv.get("lo"), y) for y, (_, iv) in zip(ys, pts)],
                [_num_or(iv.get("hi"), y) - y for y, (_, iv) in zip(ys, pts)],
            ]
            reward_ax.errorbar(
                [x for x, _ in pts], ys, yerr=err, fmt="o", color=_PATH_COLOURS[p], capsize=3
            )
    for ax, title in ((share_ax, "share of rollouts"), (reward_ax, "mean reward")):
        ax.set_xticks(range(len(cells)), [label(c) for c, _ in cells], fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    share_ax.set_ylim(0, 1.05)
    share_ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    return fig
