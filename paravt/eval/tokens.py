"""Token budget of a rollout (docs/ARCHITECTURE.md §7 [paper]) and its fit to measured eval rows.

With v visual tokens per overview, s system tokens and h history tokens per call, the main
agent reads about ``T_seq(K) = K·(v + s) + K(K+1)/2 · h`` input tokens when it makes K calls one
per turn (every turn re-reads the context, which grows by one crop each time), and
``T_par(K) = v + s + K·h`` when the K calls go out in one turn. The measured quantity is the main
agent's input tokens per rollout (``TokenRow.main_input``); sub-agent tokens are reported apart.

`fit_token_budget` estimates v from the measured visual tokens of rollouts whose main context
holds only the overview (modes that do not re-inject frames), then s and h by least squares over
all rows. Which model a row follows is its dispatch mode's ``reinjects_frames``
(``paravt.agent.modes.MODES``): ``sequential`` and ``eva`` re-inject each call's frames into the
main context (T_seq), ``parallel`` and ``none`` do not (T_par).
A rollout with K = 0 reads the overview and the system prompt once in either mode, so it is
fitted as ``v + s`` (the literal ``T_seq(0)`` is 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

import numpy as np

from paravt.agent.modes import MODES
from paravt.errors import DataError
from paravt.eval.results import ResultRow


def reinjects_frames(mode: str) -> bool:
    """Whether rows of ``mode`` follow the sequential token model (its mode class says; a mode
    name the registry does not know follows the parallel one)."""
    m = MODES.get(mode)
    return m is not None and m.reinjects_frames


def t_seq(k: int | float, v: float, s: float, h: float) -> float:
    """Main-agent input tokens with K sequential calls [paper, docs/ARCHITECTURE.md §7]."""
    return k * (v + s) + k * (k + 1) / 2 * h


def t_par(k: int | float, v: float, s: float, h: float) -> float:
    """Main-agent input tokens with K parallel calls in one turn [paper,
    docs/ARCHITECTURE.md §7]."""
    return v + s + k * h


@dataclass(frozen=True)
class TokenBudget:
    """Fitted parameters of the token model and the rows they were fitted on."""

    v: float  # visual tokens per overview
    s: float  # system (+ question) tokens
    h: float  # history tokens added per call
    n_rows: int
    rmse: float  # root-mean-square error of the fit on those rows, in tokens


def _features(row: ResultRow) -> tuple[float, float, float]:
    """Coefficients of (v, s, h) in the model of ``row``'s main-agent input tokens."""
    k = row.n_calls
    if reinjects_frames(row.mode) and k > 0:
        return (k, k, k * (k + 1) / 2)
    return (1.0, 1.0, float(k))


def fit_token_budget(rows: Sequence[ResultRow]) -> TokenBudget:
    """Estimate v, s, h from measured rows (see the module docstring). Raises `DataError` when
    the rows cannot determine s and h (fewer than two distinct call patterns)."""
    if not rows:
        raise DataError("no result rows to fit the token budget on; run an eval first")
    overview = [
        r.tokens.main_visual for r in rows if not reinjects_frames(r.mode) or r.n_calls == 0
    ]
    v = float(median(overview)) if overview else float(min(r.tokens.main_visual for r in rows))
    feats = np.array([_features(r) for r in rows], dtype=np.float64)  # N×3
    target = np.array([r.tokens.main_input for r in rows], dtype=np.float64) - v * feats[:, 0]  # N
    a = feats[:, 1:]  # N×2: coefficients of s and h
    if np.linalg.matrix_rank(a) < 2:
        raise DataError(
            f"{len(rows)} rows with call counts {sorted({r.n_calls for r in rows})} in modes "
            f"{sorted({r.mode for r in rows})} cannot separate s from h; the fit needs rows with "
            "at "
            "least two different numbers of calls"
        )
    (s, h), *_ = np.linalg.lstsq(a, target, rcond=None)
    resid = target - a @ np.array([s, h])
    return TokenBudget(
        v=v, s=float(s), h=float(h), n_rows=len(rows), rmse=float(np.sqrt(np.mean(resid**2)))
    )
