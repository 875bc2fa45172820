"""Can the method show on this task at this model size? (issue 19, deliverable 7), measured per run.

Four checks, each ``{"value", "want", "holds"}`` in ``summary.json["task_check"]``:
- ``overview_shows_needle``: the share of held-out questions whose n-frame overview holds a frame
  of the needle, per n (a property of ParaVT-Synth, from the synth manifest): the task needs
  tools at n = 4 and not at n = 64 when it is low at 4 and 1.0 at 64;
- ``direct_matches_tools_at_64``: on the reference checkpoint, answering directly (``none``) at
  n = 64 is not beaten by ``parallel`` tool use (paired bootstrap over questions, upper bound ≥ 0);
- ``direct_near_chance_at_4``: ``none`` at n = 4 cannot be told from chance (its interval's lower
  bound ≤ chance; chance = 1/#options for a multiple-choice question, 0 otherwise);
- ``direct_above_chance_at_64``: ``none`` at n = 64 (the needle is in the overview) IS told from
  chance (lower bound > chance): without it the two checks above hold for a model that cannot
  answer at all;
- ``subagent_recall``: a sub-agent whose window holds the needle reports something in ≥ 80% of
  such windows AND reports something in ≤ 20% of the windows without it (``repro.diagnosis``): a
  sub-agent that describes a needle in every window has recall 1.0 and tells the main agent
  nothing.

The reference checkpoint is the first full-grid variant that ran, in the order ``REFERENCE``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from paravt.eval.intervals import bootstrap_interval, paired_bootstrap_diff
from paravt.repro.summary import per_question

REFERENCE = ("paragrpo", "sft", "vanilla_grpo")
RECALL_WANT = 0.8
FALSE_REPORTS_MAX = 0.2


def _paired(rows: Sequence[Mapping[str, Any]], a: str, b: str, n: int) -> dict[str, Any] | None:
    """Mean per-question score of mode ``a`` minus mode ``b`` at ``n`` (averaged over seeds first)."""
    qa, qb = (per_question(r for r in rows if int(r["nframes"]) == n and r["mode"] == m) for m in (a, b))
    ids = sorted(qa.keys() & qb.keys())
    return paired_bootstrap_diff([qa[q] for q in ids], [qb[q] for q in ids]).to_dict() if ids else None


def _none_at(rows: Sequence[Mapping[str, Any]], n: int) -> dict[str, Any] | None:
    q = per_question(r for r in rows if int(r["nframes"]) == n and r["mode"] == "none")
    return bootstrap_interval(list(q.values())).to_dict() if q else None


def check_task(needle: Mapping[str, Any], chance: float, eval_rows: Mapping[str, Sequence[Mapping[str, Any]]],
               diagnoses: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``needle``: the synth manifest's ``needle["eval_prompts"]``; ``chance``: the eval set's mean
    chance score; ``eval_rows``/``diagnoses``: per variant, as `paravt repro` collects them."""
    shows = {n: (None if v.get("tool_necessary_share") is None else round(1.0 - v["tool_necessary_share"], 4))
             for n, v in sorted(needle.items(), key=lambda kv: int(kv[0]))}
    out: dict[str, Any] = {"overview_shows_needle": {
        "value": shows, "want": "low at n=4, 1.0 at n=64",
        "holds": shows.get("64") == 1.0 and (shows.get("4") or 0.0) <= 0.5}}
    ref = next((v for v in REFERENCE if eval_rows.get(v) and any(r["mode"] == "none" for r in eval_rows[v])), None)
    out["reference"] = ref
    if ref is None:
        return out
    rows = eval_rows[ref]
    diff = _paired(rows, "parallel", "none", 64)
    out["direct_matches_tools_at_64"] = {"value": {"parallel_minus_none": diff},
                                         "want": "parallel − none ≤ 0 within the interval",
                                         "holds": diff is not None and diff.get("lo") is not None and diff["lo"] <= 0}
    none4 = _none_at(rows, 4)
    out["direct_near_chance_at_4"] = {"value": {"none_acc": none4, "chance": round(chance, 4)},
                                      "want": "interval's lower bound ≤ chance",
                                      "holds": none4 is not None and none4.get("lo") is not None
                                      and none4["lo"] <= chance}
    none64 = _none_at(rows, 64)
    out["direct_above_chance_at_64"] = {"value": {"none_acc": none64, "chance": round(chance, 4)},
                                        "want": "interval's lower bound > chance",
                                        "holds": none64 is not None and none64.get("lo") is not None
                                        and none64["lo"] > chance}
    diag = diagnoses.get(ref, {})
    recall, false = (diag.get(k, {}).get("rate") for k in ("recall", "false_reports"))
    out["subagent_recall"] = {"value": {"recall": diag.get("recall"), "false_reports": diag.get("false_reports")},
                              "want": f"recall ≥ {RECALL_WANT}, false reports ≤ {FALSE_REPORTS_MAX}",
                              "holds": recall is not None and recall >= RECALL_WANT
                              and false is not None and false <= FALSE_REPORTS_MAX}
    return out


def chance_score(options: Sequence[Sequence[str] | None]) -> float:
    """Mean chance score of a question set: 1/#options for multiple choice, 0 for the rest."""
    vals = [1.0 / len(o) if o else 0.0 for o in options]
    return sum(vals) / len(vals) if vals else 0.0


CLOSURE_BAND = 15.0  # points of a closure rate (%)


def cold_start_checks(metrics: Mapping[str, float]) -> dict[str, Any]:
    """Issue 27's calibration target, on the strong-prior RL init's τ = 0.7 rollouts WITHOUT the
    think prefix (``metrics``: ``rewards.metrics.aggregate`` of them, the selection's probe):
    ``cold_start_closure``: each closure rate (%) within ``CLOSURE_BAND`` points of the paper's
    Table 5 cold start; ``cold_start_tool_code``: some rollout reverts to ``<tool_code>``."""
    from paravt.eval.paper_numbers import TABLE5

    paper = TABLE5["sft"][0]
    ours = {k: (None if metrics.get(f"closed/{k}") is None else round(100.0 * float(metrics[f"closed/{k}"]), 1))
            for k in ("think", "tool_call", "answer")}
    want = {k: getattr(paper, k) for k in ours}
    close = all(v is not None and abs(v - want[k]) <= CLOSURE_BAND for k, v in ours.items())
    code = metrics.get("tool_code_rate")
    return {
        "cold_start_closure": {"value": {"ours": ours, "paper": want},
                               "want": f"each within {CLOSURE_BAND:g} points of the paper", "holds": close},
        "cold_start_tool_code": {"value": code, "want": "> 0", "holds": code is not None and code > 0},
    }
