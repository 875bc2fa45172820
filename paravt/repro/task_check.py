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

The reference checkpoint is the first full-grid variant that ran, in the order ``REFERENCE``.

Issue 31's checks (``cold_start_task_checks``) are measured on the chosen cold start itself (the
``sft`` variant): the tools pay at n = 4, the overview suffices at n = 64, the cold start's κ, and
``subagent_recall``: a sub-agent whose window holds the needle reports something in ≥ 80% of such
windows AND in ≤ 20% of the windows without it (``repro.diagnosis``; a sub-agent that describes a
needle in every window has recall 1.0 and tells the main agent nothing), on ≥ 30 windows;
``subagent_clean``: ≥ 90% of the sub-agents' summaries stay one clean line (no tag of the main
agent's protocol, not cut at the cap: ``repro.diagnosis.clean``), on ≥ 30 windows; a main agent
that reads its summaries reads what the sub-agent writes, not only whether it saw;
``cold_start_answer_form``: the cold start's parallel answers at n = 4 come in their question's
form (an option of the MCQ, a ``[start, end]`` span, words for the open question), ≥ 90% on each
task: a final turn that copies its report but does not look back to the question answers an open
question with a letter or an MCQ with a span (docs/repro-log.md, 2026-12-07 p).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from paravt.data.rows import TASKS
from paravt.repro.intervals import bootstrap_interval, paired_bootstrap_diff
from paravt.repro.summary import per_question
from paravt.rewards.accuracy import mcq_letter, parse_interval

REFERENCE = ("paragrpo", "sft", "vanilla_grpo")
RECALL_WANT = 0.8
FALSE_REPORTS_MAX = 0.2
RECALL_WINDOWS_MIN = (
    30  # windows holding the needle that subagent_recall scores (1 window is no rate)
)
CLEAN_WANT = 0.9  # share of summaries that stay one clean line (the base's were all clean)
CLEAN_WINDOWS_MIN = 30  # executed windows subagent_clean scores (any window, needle or not)
COLD_START = "sft"  # the variant that IS the chosen RL init, evaluated without RL (repro.variants)
TOOLS_PAY_MIN = 0.15  # parallel − none at n = 4 on the cold start
SUFFICES_MIN = 0.2  # none at n = 64 − none at n = 4 on the cold start
KAPPA_BAND = (1.5, 3.5)  # the cold start's tool calls per τ = 0.7 rollout (paper: 2.50)
FORM_WANT = 0.9  # share of the cold start's answers at n = 4 in their task's form, each task


def _paired(
    rows: Sequence[Mapping[str, Any]], a: str, b: str, n: int, n_b: int | None = None
) -> dict[str, Any] | None:
    """Mean per-question score of mode ``a`` at ``n`` minus mode ``b`` at ``n_b`` (default ``n``),
    averaged over seeds first, paired over the questions both hold, with its bootstrap interval."""
    qa = per_question(r for r in rows if int(r["nframes"]) == n and r["mode"] == a)
    qb = per_question(
        r for r in rows if int(r["nframes"]) == (n if n_b is None else n_b) and r["mode"] == b
    )
    ids = sorted(qa.keys() & qb.keys())
    return (
        paired_bootstrap_diff([qa[q] for q in ids], [qb[q] for q in ids]).to_dict() if ids else None
    )


def _none_at(rows: Sequence[Mapping[str, Any]], n: int) -> dict[str, Any] | None:
    q = per_question(r for r in rows if int(r["nframes"]) == n and r["mode"] == "none")
    return bootstrap_interval(list(q.values())).to_dict() if q else None


def check_task(
    needle: Mapping[str, Any], chance: float, eval_rows: Mapping[str, Sequence[Mapping[str, Any]]]
) -> dict[str, Any]:
    """``needle``: the synth manifest's ``needle["eval_prompts"]``; ``chance``: the eval set's mean
    chance score; ``eval_rows``: per variant, as `paravt repro` collects them."""
    shows = {
        n: (
            None
            if v.get("tool_necessary_share") is None
            else round(1.0 - v["tool_necessary_share"], 4)
        )
        for n, v in sorted(needle.items(), key=lambda kv: int(kv[0]))
    }
    out: dict[str, Any] = {
        "overview_shows_needle": {
            "value": shows,
            "want": "low at n=4, 1.0 at n=64",
            "holds": shows.get("64") == 1.0 and (shows.get("4") or 0.0) <= 0.5,
        }
    }
    ref = next(
        (
            v
            for v in REFERENCE
            if eval_rows.get(v) and any(r["mode"] == "none" for r in eval_rows[v])
        ),
        None,
    )
    out["reference"] = ref
    if ref is None:
        return out
    rows = eval_rows[ref]
    diff = _paired(rows, "parallel", "none", 64)
    out["direct_matches_tools_at_64"] = {
        "value": {"parallel_minus_none": diff},
        "want": "parallel − none ≤ 0 within the interval",
        "holds": diff is not None and diff.get("lo") is not None and diff["lo"] <= 0,
    }
    none4 = _none_at(rows, 4)
    out["direct_near_chance_at_4"] = {
        "value": {"none_acc": none4, "chance": round(chance, 4)},
        "want": "interval's lower bound ≤ chance",
        "holds": none4 is not None and none4.get("lo") is not None and none4["lo"] <= chance,
    }
    none64 = _none_at(rows, 64)
    out["direct_above_chance_at_64"] = {
        "value": {"none_acc": none64, "chance": round(chance, 4)},
        "want": "interval's lower bound > chance",
        "holds": none64 is not None and none64.get("lo") is not None and none64["lo"] > chance,
    }
    return out


def chance_score(options: Sequence[Sequence[str] | None]) -> float:
    """Mean chance score of a question set: 1/#options for multiple choice, 0 for the rest."""
    vals = [1.0 / len(o) if o else 0.0 for o in options]
    return sum(vals) / len(vals) if vals else 0.0


CLOSURE_BAND = 15.0  # points of a closure rate (%)
TOOL_CODE_BAND = (0.01, 0.10)  # share of τ = 0.7 cold-start rollouts with a <tool_code> block
WEAK_FORMAT_RATIO = 0.8  # the weak prior's cold-start f_tau over the strong prior's


def cold_start_checks(metrics: Mapping[str, float]) -> dict[str, Any]:
    """Issue 27's calibration target, on the strong-prior RL init's τ = 0.7 rollouts WITHOUT the
    think prefix (``metrics``: ``rewards.metrics.aggregate`` of them, the selection's probe):
    ``cold_start_closure``: each closure rate (%) within ``CLOSURE_BAND`` points of the paper's
    Table 5 cold start; ``cold_start_tool_code``: some rollout reverts to ``<tool_code>``."""
    from paravt.repro.paper_numbers import TABLE5

    paper = TABLE5["sft"][0]
    ours = {
        k: (
            None
            if metrics.get(f"closed/{k}") is None
            else round(100.0 * float(metrics[f"closed/{k}"]), 1)
        )
        for k in ("think", "tool_call", "answer")
    }
    want = {k: getattr(paper, k) for k in ours}
    close = all(v is not None and abs(v - want[k]) <= CLOSURE_BAND for k, v in ours.items())
    code = metrics.get("tool_code_rate")
    lo, hi = TOOL_CODE_BAND
    return {
        "cold_start_closure": {
            "value": {"ours": ours, "paper": want},
            "want": f"each within {CLOSURE_BAND:g} points of the paper",
            "holds": close,
        },
        "cold_start_tool_code": {
            "value": code,
            "want": f"in [{lo}, {hi}] (paper: 3.6–3.9 % of RL rollouts)",
            "holds": code is not None and lo <= code <= hi,
        },
    }


def weak_prior_checks(weak: Mapping[str, float], strong: Mapping[str, float]) -> dict[str, Any]:
    """Issue 39: the weak prior's cold start keeps format (its τ = 0.7 f_tau ≥ ``WEAK_FORMAT_RATIO``
    of the strong prior's; paper: Qwen2.5-VL ≈ 0.85) and its κ is reported. ``weak`` and
    ``strong``: the two selections' probes of their chosen checkpoints."""
    fw, fs = weak.get("f_tau"), strong.get("f_tau")
    return {
        "weak_prior_format": {
            "value": {"weak_f_tau": fw, "strong_f_tau": fs, "weak_kappa": weak.get("kappa")},
            "want": f"weak f_tau ≥ {WEAK_FORMAT_RATIO} × strong f_tau",
            "holds": fw is not None and fs is not None and fw >= WEAK_FORMAT_RATIO * fs,
        }
    }


def cold_start_task_checks(
    eval_rows: Sequence[Mapping[str, Any]],
    diagnosis: Mapping[str, Any],
    metrics: Mapping[str, float],
) -> dict[str, Any]:
    """Issue 31's checks: do the tools pay, and only where the overview misses the needle, on the
    chosen cold start? ``eval_rows``: the ``sft`` variant's greedy eval rows (every n × mode);
    ``diagnosis``: its parallel pipeline (``repro.diagnosis``); ``metrics``: the τ = 0.7 probe of
    the chosen checkpoint (no think prefix), its ``kappa`` measured at the un-gated budget (64, the
    ``sft`` variant's probe) when that variant ran: the budget the paper's 2.50 is quoted at.

    - ``tools_pay_at_4``: ``parallel`` − ``none`` at n = 4, paired over questions: mean ≥
      ``TOOLS_PAY_MIN`` AND the bootstrap lower bound > 0 (``by_task``: the same per task, where
      the rows carry one; no check reads it);
    - ``overview_suffices_at_64``: ``none`` at n = 64 − ``none`` at n = 4, paired: mean ≥
      ``SUFFICES_MIN``;
    - ``cold_start_kappa``: κ of the τ = 0.7 probe within ``KAPPA_BAND`` (paper 2.50);
    - ``subagent_recall``: recall ≥ ``RECALL_WANT`` and false reports ≤ ``FALSE_REPORTS_MAX``, on
      ≥ ``RECALL_WINDOWS_MIN`` windows holding the needle;
    - ``subagent_clean``: the share of clean summaries ≥ ``CLEAN_WANT``, on ≥
      ``CLEAN_WINDOWS_MIN`` executed windows.
    Each is ``{"value", "want", "holds"}``; nothing measured never holds."""
    pay = _paired(eval_rows, "parallel", "none", 4)
    tasks = sorted({str(r["task"]) for r in eval_rows if r.get("task")})
    by_task = {
        t: _paired([r for r in eval_rows if r.get("task") == t], "parallel", "none", 4)
        for t in tasks
    }
    suff = _paired(eval_rows, "none", "none", 64, 4)
    kappa = metrics.get("kappa")
    lo_k, hi_k = KAPPA_BAND
    return {
        "tools_pay_at_4": {
            "value": {"parallel_minus_none": pay, "by_task": by_task, "checkpoint": COLD_START},
            "want": f"mean ≥ {TOOLS_PAY_MIN}, lower bound > 0",
            "holds": pay is not None
            and pay.get("lo") is not None
            and pay["mean"] >= TOOLS_PAY_MIN
            and pay["lo"] > 0,
        },
        "overview_suffices_at_64": {
            "value": {"none64_minus_none4": suff, "checkpoint": COLD_START},
            "want": f"mean ≥ {SUFFICES_MIN}",
            "holds": suff is not None and suff["mean"] >= SUFFICES_MIN,
        },
        "cold_start_kappa": {
            "value": kappa,
            "want": f"in [{lo_k}, {hi_k}] (paper 2.50)",
            "holds": kappa is not None and lo_k <= float(kappa) <= hi_k,
        },
        **_subagent_checks(diagnosis),
        **answer_form_check(eval_rows),
    }


def in_form(task: str, answer: str, options: Sequence[str] | None) -> bool:
    """Whether ``answer`` has the form of ``task``'s answer, right or wrong: an MCQ's names one
    option (its letter or its whole text, ``mcq_letter``), a span's holds two times
    (``parse_interval``), an open question's is words that are neither."""
    if task == "mcq":
        return mcq_letter(answer, options) is not None
    if task == "tvg":
        return parse_interval(answer) is not None
    return bool(answer.strip()) and parse_interval(answer) is None and mcq_letter(answer) is None


def answer_form_check(eval_rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``cold_start_answer_form``: of the cold start's parallel episodes at n = 4 that answered,
    the share per task whose answer is in its task's form (``in_form``); holds when each task's
    is ≥ ``FORM_WANT``. Over seeds pooled, on the tasks the eval asks (an eval of MCQs alone is
    checked on them); a task asked and never answered, or no task at all, does not hold."""
    hits: dict[str, list[bool]] = {}
    for r in eval_rows:
        task = r.get("task")
        if r["mode"] != "parallel" or int(r["nframes"]) != 4 or task not in TASKS:
            continue
        pred = r.get("prediction")
        seen = hits.setdefault(str(task), [])
        if pred:
            seen.append(in_form(str(task), str(pred), r.get("options")))
    rates = {
        t: {"rate": round(sum(h) / len(h), 4), "hits": sum(h), "of": len(h)} if h else None
        for t, h in hits.items()
    }
    return {
        "cold_start_answer_form": {
            "value": {"by_task": rates, "checkpoint": COLD_START},
            "want": f"≥ {FORM_WANT} of the answers at n = 4 in their task's form, on each task",
            "holds": bool(rates)
            and all(v is not None and v["rate"] >= FORM_WANT for v in rates.values()),
        }
    }


def _subagent_checks(diagnosis: Mapping[str, Any]) -> dict[str, Any]:
    """``subagent_recall`` and ``subagent_clean`` of ``cold_start_task_checks``, from the cold
    start's pipeline diagnosis (``repro.diagnosis``)."""
    recall, false, clean = (diagnosis.get(k) or {} for k in ("recall", "false_reports", "clean"))
    windows = int(recall.get("of") or 0)
    return {
        "subagent_recall": {
            "value": {
                "recall": recall or None,
                "false_reports": false or None,
                "checkpoint": COLD_START,
            },
            "want": f"recall ≥ {RECALL_WANT}, false reports ≤ {FALSE_REPORTS_MAX}, "
            f"on ≥ {RECALL_WINDOWS_MIN} windows with the needle",
            "holds": windows >= RECALL_WINDOWS_MIN
            and recall.get("rate") is not None
            and recall["rate"] >= RECALL_WANT
            and false.get("rate") is not None
            and false["rate"] <= FALSE_REPORTS_MAX,
        },
        "subagent_clean": {
            "value": {"clean": clean or None, "checkpoint": COLD_START},
            "want": f"≥ {CLEAN_WANT} of summaries one clean line, on ≥ {CLEAN_WINDOWS_MIN} windows",
            "holds": int(clean.get("of") or 0) >= CLEAN_WINDOWS_MIN
            and clean.get("rate") is not None
            and clean["rate"] >= CLEAN_WANT,
        },
    }
