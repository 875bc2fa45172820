"""The report's figure of measured main-agent input tokens against the number of calls K, beside the
fitted token budget of `paravt.eval.tokens` (docs/ARCHITECTURE.md §7)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import BinaryIO

import numpy as np
from matplotlib.figure import Figure

from paravt.errors import DataError
from paravt.eval.results import ResultRow
from paravt.eval.tokens import fit_token_budget, t_par, t_seq


def tokens_vs_k_figure(rows: Sequence[ResultRow], *, k_max: int | None = None) -> Figure:
    """Measured main-agent input tokens per rollout against the number of calls K, per mode
    (points: rollouts; line markers: mean at each K), next to the fitted T_par / T_seq curves."""
    fig = Figure(figsize=(7.0, 4.2), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    modes = sorted({r.mode for r in rows})
    colors = {m: f"C{i}" for i, m in enumerate(modes)}
    for m in modes:
        mr = [r for r in rows if r.mode == m]
        ks = np.array([r.n_calls for r in mr], dtype=float)
        ys = np.array([r.tokens.main_input for r in mr], dtype=float)
        jitter = (np.arange(len(ks)) % 5 - 2) * 0.04
        ax.scatter(ks + jitter, ys, s=10, alpha=0.35, color=colors[m])
        uk = sorted(set(ks.tolist()))
        ax.plot(
            uk,
            [fmean(ys[ks == k]) for k in uk],
            "o",
            ms=7,
            color=colors[m],
            label=f"{m} (measured mean)",
        )
    kmax = k_max if k_max is not None else max([r.n_calls for r in rows] + [4])
    grid = np.arange(0, kmax + 1)
    try:
        b = fit_token_budget(rows)
    except DataError as e:
        ax.set_title(f"measured only (no fit: {str(e)[:60]}…)", fontsize=8)
    else:
        ax.plot(
            grid,
            [t_par(int(k), b.v, b.s, b.h) for k in grid],
            "-",
            color="0.3",
            label="T_par = v+s+K·h",
        )
        ax.plot(
            grid[1:],
            [t_seq(int(k), b.v, b.s, b.h) for k in grid[1:]],
            "--",
            color="0.3",
            label="T_seq = K(v+s)+K(K+1)/2·h",
        )
        ax.set_title(
            f"fit: v={b.v:.0f}, s={b.s:.0f}, h={b.h:.0f} (rmse {b.rmse:.0f} tok, {b.n_rows} "
            "rollouts)",
            fontsize=9,
        )
    ax.set_xlabel("K (tool calls per rollout)")
    ax.set_ylabel("main-agent input tokens / rollout")
    ax.set_xticks(grid)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def tokens_vs_k_plot(
    rows: Sequence[ResultRow], out_png: str | Path | BinaryIO, *, k_max: int | None = None
) -> None:
    """Write `tokens_vs_k_figure` as a PNG to a path or binary file object."""
    if not rows:
        raise DataError("no result rows to plot tokens against K; run an eval first")
    tokens_vs_k_figure(rows, k_max=k_max).savefig(out_png, format="png")
