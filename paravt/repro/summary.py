"""``DIR/summary.json`` of `paravt repro` (issue 19's contract), from measured inputs only. Pure.

Training metrics per variant: each seed contributes one value per key (the mean over the last half
of its logged RL steps; for ``sft``, the τ = 0.7 probe of the cold start), and the interval is the
95% t-interval over seeds (``lo``/``hi`` null with one seed). Eval: per mode and overview budget n,
each question's score is averaged over seeds, then a seeded bootstrap over questions.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from paravt.repro.intervals import Interval, bootstrap_interval, t_interval

TRAIN_KEYS = ("f_tau", "f_tau_ref", "kappa", "kappa_written", "tool_code_rate", "skip_tool_rate")
#: Ranges the intervals are clipped to (rates; kappa counts calls); f_tau (R_fmt) is left as is.
BOUNDS = {
    "kappa": (0.0, math.inf),
    "kappa_written": (0.0, math.inf),
    "tool_code_rate": (0.0, 1.0),
    "skip_tool_rate": (0.0, 1.0),
    "closed/think": (0.0, 1.0),
    "closed/tool_call": (0.0, 1.0),
    "closed/answer": (0.0, 1.0),
}
CLOSURE_KEYS = {"think": "closed/think", "tool_call": "closed/tool_call", "answer": "closed/answer"}


def tail_means(log: Sequence[Mapping[str, Any]], frac: float = 0.5) -> dict[str, float]:
    """Mean of every numeric key over the last ``ceil(frac · len)`` logged steps."""
    rows = list(log)[-max(1, math.ceil(frac * len(log))) :] if log else []
    sums: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        for k, v in r.items():
            if k != "step" and isinstance(v, (int, float)) and math.isfinite(v):
                sums[k].append(float(v))
    return {k: sum(v) / len(v) for k, v in sums.items()}


def _iv(values: Iterable[float], key: str) -> dict[str, Any]:
    vals = list(values)
    if not vals:
        return Interval(float("nan"), None, None, 0).to_dict()
    return t_interval(vals, bounds=BOUNDS.get(key)).to_dict()


def train_block(per_seed: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {k: _iv((m[k] for m in per_seed if k in m), k) for k in TRAIN_KEYS}
    out["closure"] = {
        name: _iv((m[key] for m in per_seed if key in m), key) for name, key in CLOSURE_KEYS.items()
    }
    return out


def per_question(rows: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Score per question id, averaged over seeds."""
    acc: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        acc[str(r["id"])].append(float(r["score"]))
    return {q: sum(v) / len(v) for q, v in sorted(acc.items())}


def eval_block(rows: Sequence[Mapping[str, Any]], *, seed: int = 0) -> dict[str, Any]:
    """Rows carry ``mode``, ``nframes``, ``id``, ``score``, ``tool_necessary`` (one per seed)."""
    out: dict[str, Any] = {}
    for mode in sorted({r["mode"] for r in rows}):
        mrows = [r for r in rows if r["mode"] == mode]
        by_n = {}
        for n in sorted({int(r["nframes"]) for r in mrows}):
            q = per_question(r for r in mrows if int(r["nframes"]) == n)
            by_n[str(n)] = bootstrap_interval(list(q.values()), seed=seed).to_dict()
        block: dict[str, Any] = {"acc_by_n": by_n}
        for name, flag in (("acc_necessary", True), ("acc_unnecessary", False)):
            q = per_question(
                {**r, "id": f"{r['id']}@{r['nframes']}"}
                for r in mrows
                if r.get("tool_necessary") is flag
            )
            block[name] = bootstrap_interval(list(q.values()), seed=seed).to_dict() if q else None
        out[mode] = block
    return out


def _mean(block: Mapping[str, Any], key: str) -> float | None:
    m = block.get(key, {}).get("mean") if isinstance(block.get(key), Mapping) else None
    return None if m is None or (isinstance(m, float) and math.isnan(m)) else float(m)


def above(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """a > b: by the intervals when both have one (a.lo > b.hi), else by the means."""
    if a.get("lo") is not None and b.get("hi") is not None:
        return float(a["lo"]) > float(b["hi"])
    return float(a["mean"]) > float(b["mean"])


def variant_summary(
    per_seed: Sequence[Mapping[str, float]],
    eval_rows: Sequence[Mapping[str, Any]],
    *,
    seed: int = 0,
) -> dict[str, Any]:
    return {
        **train_block(per_seed),
        "seeds": len(per_seed),
        "eval": eval_block(eval_rows, seed=seed),
    }
