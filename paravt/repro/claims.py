"""The paper's claims checked against a `paravt repro` run. Paper numbers: ``paper_numbers.py``
(ParaVT Table 2 and paper §3, quoted from /work/shared/PAPER.md); ours come from the run's summary.
A claim whose variants were not run
says so and does not hold. Comparisons use the 95% intervals when both sides have one (over
seeds), else the means (one seed: stated in the claim's ``note``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from paravt.repro.intervals import paired_bootstrap_diff
from paravt.repro.paper_numbers import TABLE2, WEAK_PRIOR_FORMAT, WEAK_PRIOR_KAPPA
from paravt.repro.summary import above

Summaries = Mapping[str, Mapping[str, Any]]
Check = Callable[
    [Summaries, Mapping[str, Sequence[Mapping[str, Any]]]], tuple[dict[str, Any], bool]
]


@dataclass(frozen=True)
class Claim:
    text: str
    paper: dict[str, Any]
    needs: tuple[str, ...]
    check: Check


def _m(s: Summaries, v: str, key: str) -> Mapping[str, Any]:
    return s[v][key]


def _ours(s: Summaries, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    return {f"{v}.{k}": _m(s, v, k)["mean"] for v, k in pairs}


def _collapse(s: Summaries, _: Any) -> tuple[dict[str, Any], bool]:
    sft, van = _m(s, "sft", "kappa"), _m(s, "vanilla_grpo", "kappa")
    return _ours(s, [("sft", "kappa"), ("vanilla_grpo", "kappa")]), sft["mean"] > 0 and van[
        "mean"
    ] <= 0.25 * sft["mean"]


def _f_above(hi: str, lo: str) -> Check:
    def check(s: Summaries, _: Any) -> tuple[dict[str, Any], bool]:
        return _ours(s, [(hi, "f_tau"), (lo, "f_tau")]), above(
            _m(s, hi, "f_tau"), _m(s, lo, "f_tau")
        )

    return check


def _gating(s: Summaries, _: Any) -> tuple[dict[str, Any], bool]:
    ours = _ours(
        s,
        [
            ("gating_only", "kappa"),
            ("vanilla_grpo", "kappa"),
            ("gating_only", "f_tau"),
            ("vanilla_grpo", "f_tau"),
        ],
    )
    k_up = above(_m(s, "gating_only", "kappa"), _m(s, "vanilla_grpo", "kappa"))
    f_not_up = not above(_m(s, "gating_only", "f_tau"), _m(s, "vanilla_grpo", "f_tau"))
    return ours, k_up and f_not_up


def _no_rtool(s: Summaries, _: Any) -> tuple[dict[str, Any], bool]:
    return (
        _ours(s, [("paragrpo", "kappa"), ("paragrpo_no_rtool", "kappa")]),
        above(_m(s, "paragrpo", "kappa"), _m(s, "paragrpo_no_rtool", "kappa")),
    )


def _weak(s: Summaries, _: Any) -> tuple[dict[str, Any], bool]:
    ours = _ours(
        s,
        [
            ("weak_prior_vanilla", "f_tau"),
            ("weak_prior_vanilla", "kappa"),
            ("vanilla_grpo", "f_tau"),
        ],
    )
    keeps = not above(_m(s, "vanilla_grpo", "f_tau"), _m(s, "weak_prior_vanilla", "f_tau"))
    return ours, keeps and _m(s, "weak_prior_vanilla", "kappa")["mean"] <= 0.1


def _parallel(
    s: Summaries, rows: Mapping[str, Sequence[Mapping[str, Any]]]
) -> tuple[dict[str, Any], bool]:
    r = rows.get("paragrpo", [])
    by = {
        (m, str(x["id"]), int(x["nframes"]), x.get("seed", 0)): float(x["score"])
        for x in r
        for m in [x["mode"]]
    }
    keys = sorted(k[1:] for k in by if k[0] == "parallel" and ("sequential", *k[1:]) in by)
    if not keys:
        return {"note": "no paired parallel/sequential eval rows of paragrpo"}, False
    d = paired_bootstrap_diff(
        [by[("parallel", *k)] for k in keys], [by[("sequential", *k)] for k in keys]
    )
    return {"parallel_minus_sequential": d.to_dict()}, bool(d.lo is not None and d.lo > 0)


def _paper(*pairs: tuple[str, str]) -> dict[str, Any]:
    """``{"variant.key": the paper's Table 2 value}``."""
    return {f"{v}.{k}": getattr(TABLE2[v], k) for v, k in pairs}


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "vanilla GRPO collapses tool calls (kappa to ≤ 1/4 of the cold start's)",
        _paper(("sft", "kappa"), ("vanilla_grpo", "kappa")),
        ("sft", "vanilla_grpo"),
        _collapse,
    ),
    Claim(
        "PARA-GRPO lifts f_tau over vanilla GRPO",
        _paper(("paragrpo", "f_tau"), ("vanilla_grpo", "f_tau")),
        ("paragrpo", "vanilla_grpo"),
        _f_above("paragrpo", "vanilla_grpo"),
    ),
    Claim(
        "Exploration Anchoring alone lifts f_tau over vanilla GRPO",
        _paper(("anchoring_only", "f_tau"), ("vanilla_grpo", "f_tau")),
        ("anchoring_only", "vanilla_grpo"),
        _f_above("anchoring_only", "vanilla_grpo"),
    ),
    Claim(
        "nFrames Gating alone raises kappa but not f_tau",
        _paper(
            ("gating_only", "kappa"),
            ("vanilla_grpo", "kappa"),
            ("gating_only", "f_tau"),
            ("vanilla_grpo", "f_tau"),
        ),
        ("gating_only", "vanilla_grpo"),
        _gating,
    ),
    Claim(
        "removing R_tool collapses kappa",
        _paper(("paragrpo", "kappa"), ("paragrpo_no_rtool", "kappa")),
        ("paragrpo", "paragrpo_no_rtool"),
        _no_rtool,
    ),
    Claim(
        "removing gamma lowers f_tau",
        _paper(("paragrpo", "f_tau"), ("paragrpo_no_gamma", "f_tau")),
        ("paragrpo", "paragrpo_no_gamma"),
        _f_above("paragrpo", "paragrpo_no_gamma"),
    ),
    Claim(
        "a weak prior keeps format but makes no tool calls (kappa ≤ 0.1) under vanilla GRPO",
        {"weak_prior.format": WEAK_PRIOR_FORMAT, "weak_prior.kappa": WEAK_PRIOR_KAPPA},
        ("weak_prior_vanilla", "vanilla_grpo"),
        _weak,
    ),
    Claim(
        "parallel dispatch beats sequential on the same checkpoint (paired bootstrap, lo > 0)",
        {
            "parallel.VideoMME": TABLE2["parallel_dispatch"].videomme,
            "sequential.VideoMME": TABLE2["sequential_dispatch"].videomme,
        },
        ("paragrpo",),
        _parallel,
    ),
)


def check_claims(
    summaries: Summaries, eval_rows: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[dict[str, Any]]:
    out = []
    for c in CLAIMS:
        missing = [v for v in c.needs if v not in summaries]
        if missing:
            out.append(
                {
                    "claim": c.text,
                    "paper": c.paper,
                    "ours": None,
                    "holds": False,
                    "note": f"not run: {', '.join(missing)}",
                }
            )
            continue
        ours, holds = c.check(summaries, eval_rows)
        seeds = min(int(summaries[v].get("seeds", 0)) for v in c.needs)
        note = (
            "1 seed: means compared, no interval"
            if seeds < 2
            else f"{seeds} seeds: 95% intervals compared"
        )
        out.append(
            {"claim": c.text, "paper": c.paper, "ours": ours, "holds": bool(holds), "note": note}
        )
    return out
