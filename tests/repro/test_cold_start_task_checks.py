"""Issue 31's checks on hand-made eval rows of the cold start: the tools pay at n = 4, the overview
suffices at n = 64, κ in the paper's band, and a sub-agent recall scored on enough windows. Each
check is shown passing and failing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paravt.repro.task_check import cold_start_task_checks


def _rows(scores: dict[tuple[str, int], list[float]]) -> list[dict[str, Any]]:
    """Eval rows: one per (mode, n, question index), question ids shared across modes and n."""
    return [
        {"id": f"q{i}", "mode": mode, "nframes": n, "score": s, "seed": 0, "tool_necessary": n == 4}
        for (mode, n), ss in scores.items()
        for i, s in enumerate(ss)
    ]


def _diag(hits: int, of: int, false: int, false_of: int, dirty: int = 0) -> dict[str, Any]:
    windows = of + false_of
    return {
        "recall": {"rate": hits / of if of else None, "hits": hits, "of": of},
        "false_reports": {
            "rate": false / false_of if false_of else None,
            "hits": false,
            "of": false_of,
        },
        "clean": {
            "rate": (windows - dirty) / windows if windows else None,
            "hits": windows - dirty,
            "of": windows,
        },
    }


def _method_pays() -> list[dict[str, Any]]:
    # 40 questions: at n = 4 tools answer 30, directly 6; at n = 64 directly 32
    return _rows(
        {
            ("parallel", 4): [1.0] * 30 + [0.0] * 10,
            ("none", 4): [1.0] * 6 + [0.0] * 34,
            ("none", 64): [1.0] * 32 + [0.0] * 8,
        }
    )


def _answered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with a task each (in turn) and an answer in its task's form."""
    said = {"mcq": "B", "oe": "red", "tvg": "[12, 16]"}
    for i, r in enumerate(rows):
        r["task"] = ("mcq", "oe", "tvg")[i % 3]
        r["prediction"], r["options"] = (
            said[r["task"]],
            ["A. red", "B. blue", "C. cyan", "D. green"],
        )
    return rows


def test_a_cold_start_whose_tools_pay_passes_every_check() -> None:
    out = cold_start_task_checks(_answered(_method_pays()), _diag(36, 40, 3, 80), {"kappa": 2.4})
    assert out["tools_pay_at_4"]["value"]["parallel_minus_none"]["mean"] == 0.6  # (30 − 6) / 40
    assert (
        out["overview_suffices_at_64"]["value"]["none64_minus_none4"]["mean"] == 0.65
    )  # (32 − 6) / 40
    assert {k: v["holds"] for k, v in out.items()} == dict.fromkeys(out, True)


def test_tools_that_pay_no_more_than_answering_directly_fail() -> None:
    # the demo of issue 31: tools at n = 4 score 0.02, directly 0.06, direct at 64 0.09
    rows = _rows(
        {
            ("parallel", 4): [1.0] + [0.0] * 47,
            ("none", 4): [1.0] * 3 + [0.0] * 45,
            ("none", 64): [1.0] * 4 + [0.0] * 44,
        }
    )
    out = cold_start_task_checks(rows, _diag(1, 1, 0, 6), {"kappa": 0.38})
    assert not any(v["holds"] for v in out.values()), out
    assert out["cold_start_kappa"]["value"] == 0.38


def test_a_small_gain_or_one_without_a_positive_lower_bound_fails() -> None:
    # +0.10 on average: under the 0.15 the check asks for
    rows = _rows(
        {
            ("parallel", 4): [1.0] * 10 + [0.0] * 30,
            ("none", 4): [1.0] * 6 + [0.0] * 34,
            ("none", 64): [1.0] * 14 + [0.0] * 26,
        }
    )
    out = cold_start_task_checks(rows, {}, {})
    assert (
        not out["tools_pay_at_4"]["holds"] and out["overview_suffices_at_64"]["holds"]
    )  # 0.2 exactly
    # +0.2 on average from 2 questions of 10: the interval reaches 0
    noisy = _rows(
        {("parallel", 4): [1.0, 1.0] + [0.0] * 8, ("none", 4): [0.0] * 10, ("none", 64): [0.0] * 10}
    )
    pay = cold_start_task_checks(noisy, {}, {})["tools_pay_at_4"]
    assert pay["value"]["parallel_minus_none"]["mean"] == 0.2 and not pay["holds"]


def test_kappa_outside_the_band_fails_at_both_ends() -> None:
    holds = {
        k: cold_start_task_checks([], {}, {"kappa": k})["cold_start_kappa"]["holds"]
        for k in (0.5, 1.5, 2.5, 3.5, 4.9)
    }
    assert holds == {0.5: False, 1.5: True, 2.5: True, 3.5: True, 4.9: False}
    assert not cold_start_task_checks([], {}, {})["cold_start_kappa"]["holds"]  # not measured


def test_subagent_recall_needs_enough_windows_and_few_false_reports() -> None:
    rows = _method_pays()
    check = {
        name: cold_start_task_checks(rows, d, {"kappa": 2.0})["subagent_recall"]["holds"]
        for name, d in {
            "one window": _diag(1, 1, 0, 6),
            "29 windows": _diag(29, 29, 0, 60),
            "30 windows": _diag(30, 30, 0, 60),
            "reports everywhere": _diag(30, 30, 60, 60),
            "misses": _diag(20, 30, 0, 60),
        }.items()
    }
    assert check == {
        "one window": False,
        "29 windows": False,
        "30 windows": True,
        "reports everywhere": False,
        "misses": False,
    }


def test_subagent_clean_needs_nine_in_ten_clean_summaries_on_enough_windows() -> None:
    rows = _method_pays()
    check = {
        name: cold_start_task_checks(rows, d, {"kappa": 2.0})["subagent_clean"]["holds"]
        for name, d in {
            "all clean": _diag(30, 30, 0, 60),
            "9 of 90 leak": _diag(30, 30, 0, 60, dirty=9),
            "10 of 90 leak": _diag(30, 30, 0, 60, dirty=10),
            "too few windows": _diag(10, 10, 0, 19),
            "30 windows, 10 with the needle": _diag(10, 10, 0, 20),
        }.items()
    }
    assert check == {
        "all clean": True,
        "9 of 90 leak": True,
        "10 of 90 leak": False,
        "too few windows": False,
        "30 windows, 10 with the needle": True,  # every executed window counts, not recall's
    }


def test_nothing_measured_never_holds() -> None:
    out = cold_start_task_checks([], {}, {})
    assert set(out) == {
        "tools_pay_at_4",
        "overview_suffices_at_64",
        "cold_start_kappa",
        "subagent_recall",
        "subagent_clean",
        "cold_start_answer_form",
    }
    assert not any(v["holds"] for v in out.values())


def _form_rows(answers: dict[str, list[str]], mode: str = "parallel", n: int = 4) -> list[Any]:
    opts = ["A. red", "B. blue", "C. cyan", "D. green"]
    return [
        {
            "id": f"{t}{i}",
            "mode": mode,
            "nframes": n,
            "score": 0.0,
            "seed": 0,
            "task": t,
            "prediction": a,
            "options": opts if t == "mcq" else None,
        }
        for t, said in answers.items()
        for i, a in enumerate(said)
    ]


def test_answer_form_counts_each_tasks_answers_in_its_form_right_or_wrong() -> None:
    """An MCQ answered by a letter or an option's text, a span by two times, an open question by
    words: in form, right or wrong. A letter for an open question, a span for an MCQ, a colour
    for a span: not (the raw final turns of docs/repro-log.md, 2026-12-07 p)."""
    rows = _form_rows(
        {
            "mcq": ["A", "blue", "D"] * 3 + ["[25, 35]"],  # 9 of 10
            "oe": ["green", "orange"] * 4 + ["C", "[25, 35]"],  # 8 of 10
            "tvg": ["[16, 20]", "from 3 s to 9 s"] * 5,  # 10 of 10
        }
    )
    rows += _form_rows({"oe": ["C"] * 20}, mode="none") + _form_rows({"oe": ["C"] * 20}, n=64)
    rows += _form_rows({"oe": [None, ""] * 5})  # no answer: not counted
    check = cold_start_task_checks(rows, {}, {})["cold_start_answer_form"]
    got = {t: (v["hits"], v["of"]) for t, v in check["value"]["by_task"].items()}
    assert got == {"mcq": (9, 10), "oe": (8, 10), "tvg": (10, 10)}
    assert not check["holds"]  # the open question's 0.8 < 0.9
    fixed = [r for r in rows if r["prediction"] not in ("C", "[25, 35]") or r["task"] != "oe"]
    assert cold_start_task_checks(fixed, {}, {})["cold_start_answer_form"]["holds"]
    # an eval without span questions is checked on the tasks it asks
    no_spans = [r for r in fixed if r["task"] != "tvg"]
    asked = cold_start_task_checks(no_spans, {}, {})["cold_start_answer_form"]
    assert set(asked["value"]["by_task"]) == {"mcq", "oe"} and asked["holds"]
    # span questions asked and never answered: that task does not hold
    silent = no_spans + _form_rows({"tvg": [None, ""] * 3})
    unanswered = cold_start_task_checks(silent, {}, {})["cold_start_answer_form"]
    assert unanswered["value"]["by_task"]["tvg"] is None and not unanswered["holds"]


def test_tools_pay_per_task_is_read_from_the_rows_task() -> None:
    """``by_task`` pairs each task's questions alone: here the tools pay on the open questions
    (+1 on each) and lose on the spans (−0.5 on each), +0.25 overall."""
    rows = _rows(
        {
            ("parallel", 4): [1.0, 1.0, 0.0, 0.0],
            ("none", 4): [0.0, 0.0, 0.5, 0.5],
            ("none", 64): [0.0] * 4,
        }
    )
    for r in rows:
        r["task"] = "oe" if r["id"] in ("q0", "q1") else "tvg"
    pay = cold_start_task_checks(rows, {}, {})["tools_pay_at_4"]["value"]
    assert pay["parallel_minus_none"]["mean"] == 0.25
    assert {t: d["mean"] for t, d in pay["by_task"].items()} == {"oe": 1.0, "tvg": -0.5}
    assert (
        cold_start_task_checks(_method_pays(), {}, {})["tools_pay_at_4"]["value"]["by_task"] == {}
    )


def test_the_repros_eval_rows_carry_what_the_answer_form_check_reads(tmp_path: Path) -> None:
    """`repro.training.eval_variant` hands the checks rows with each answer and the options: a
    finished eval (its results on disk, its stage marked done) read back runs no model, and its
    rows score the form (without them every task counted no answer)."""
    from paravt.eval.results import ResultRow
    from paravt.repro.presets import PRESETS, base_config
    from paravt.repro.stages import DONE
    from paravt.repro.training import eval_variant
    from paravt.repro.variants import VARIANTS

    p = PRESETS["demo"]
    said = {"mcq": "C", "oe": "C", "tvg": "[3, 9]"}  # a letter for the open question: out of form
    for n in sorted(set(p.eval_ns) | set(p.grid_ns)):
        d = tmp_path / "sft" / "seed0" / f"eval_n{n}"
        d.mkdir(parents=True)
        rows = [
            ResultRow(
                id=f"q-{t}",
                mode="parallel",
                task=t,
                subset="synth",
                nframes=n,
                video="v.mp4",
                duration=60.0,
                question="?",
                answer="A",
                options=("A. red", "B. blue", "C. cyan", "D. green") if t == "mcq" else None,
                prediction=a,
                score=0.0,
                correct=False,
            )
            for t, a in said.items()
        ]
        (d / "results.jsonl").write_text("".join(r.to_json() + "\n" for r in rows))
        (d / DONE).write_text("1.0\n")
    cfg = base_config(tmp_path, p)
    got = eval_variant(tmp_path, cfg, p, VARIANTS["sft"], 0, "no/model", limit=None)
    assert {(r["task"], r["prediction"]) for r in got if r["nframes"] == 4} == set(said.items())
    form = cold_start_task_checks(got, {}, {})["cold_start_answer_form"]["value"]["by_task"]
    assert {t: (v["hits"], v["of"]) for t, v in form.items()} == {
        "mcq": (1, 1),
        "oe": (0, 1),
        "tvg": (1, 1),
    }
