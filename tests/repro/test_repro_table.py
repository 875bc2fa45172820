"""The terminal view of a summary: intervals formatted, missing values shown as "–", claims that
were not run counted instead of listed."""

from __future__ import annotations

import io

from rich.console import Console

from paravt.repro.table import cell, print_summary

SUMMARY = {
    "meta": {"preset": "quick", "seeds": 2, "eval_questions": 48},
    "variants": {
        "paragrpo": {
            "f_tau": {"mean": 0.412, "lo": 0.3, "hi": 0.52},
            "kappa": {"mean": 2.0, "lo": None, "hi": None},
            "closure": {"think": {"mean": 0.9, "lo": 0.8, "hi": 1.0}},
            "eval": {"parallel": {"acc_by_n": {"4": {"mean": 0.25, "lo": 0.1, "hi": 0.4}}}},
        },
    },
    "claims": [
        {
            "claim": "PARA-GRPO lifts f_tau",
            "paper": {"paragrpo.f_tau": 0.41},
            "ours": {"paragrpo.f_tau": 0.412},
            "holds": True,
            "note": "2 seeds",
        },
        {
            "claim": "removing gamma lowers f_tau",
            "paper": {},
            "ours": None,
            "holds": False,
            "note": "not run: paragrpo_no_gamma",
        },
        {
            "claim": "parallel beats sequential",
            "paper": {"parallel.VideoMME": 62.1},
            "ours": {"parallel_minus_sequential": {"mean": 0.05, "lo": -0.02, "hi": 0.11}},
            "holds": False,
            "note": "paired",
        },
    ],
}


def test_cell_shows_the_interval_only_when_there_is_one() -> None:
    assert cell({"mean": 0.412, "lo": 0.3, "hi": 0.52}) == "0.41 [0.30, 0.52]"
    assert cell({"mean": 2.0, "lo": None, "hi": None}) == "2.00"
    assert cell({"mean": float("nan")}) == "–" and cell(None) == "–"


def test_print_summary_lists_run_claims_and_counts_the_rest() -> None:
    buf = io.StringIO()
    print_summary(SUMMARY, Console(file=buf, width=300))
    text = buf.getvalue()
    assert "0.41 [0.30, 0.52]" in text and "0.25 [0.10, 0.40]" in text
    assert "PARA-GRPO lifts f_tau" in text and "removing gamma" not in text
    assert "0.05 [-0.02, 0.11]" in text  # a paired difference shows its interval
    assert "1 claim(s) need variants" in text
    assert "this run supports 1 of the 2 paper claims it tests: PARA-GRPO lifts f_tau" in text


def test_verdict_when_nothing_holds_or_nothing_is_tested() -> None:
    from paravt.repro.table import verdict

    assert verdict([{"claim": "a", "holds": False}]).startswith(
        "this run supports 0 of the 1 paper claims it tests ("
    )
    assert verdict([]) == "this run tests none of the paper's claims"
