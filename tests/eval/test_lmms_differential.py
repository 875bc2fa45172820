"""Our lmms-eval scorers against lmms-eval's own functions on ≥ 500 generated responses.

The checked-in fixture holds lmms-eval 0.7.3's outputs (``tests/eval/lmms_reference.py`` writes
it); every item whose lmms-eval prediction is not LongVideoBench's random fallback must agree on
the stripped text, the prediction and the score, and the aggregates must agree. When lmms-eval is
importable (``pip install lmms-eval==0.7.3``) the fixture itself is re-derived live.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from paravt.eval.benchmarks import lmms_rules as L
from paravt.eval.benchmarks.base import ScoredItem, option_letters
from paravt.eval.benchmarks.mmvu import MMVU_DISCIPLINES
from paravt.eval.benchmarks.scoring import aggregate, score_lmms

sys.path.insert(0, str(Path(__file__).parent))
from lmms_corpus import corpus  # noqa: E402
from lmms_reference import FIXTURE, RANDOM, lmms_outputs  # noqa: E402


def _fixture() -> tuple[list[dict], dict[str, object]]:
    lines = [json.loads(x) for x in FIXTURE.read_text(encoding="utf-8").splitlines()]
    return [x for x in lines if "record" in x], {
        x["aggregate"]: x["value"] for x in lines if "aggregate" in x
    }


ITEMS, AGGREGATES = _fixture()


def _groups(rec: dict) -> dict:
    g = dict(rec["groups"])
    if rec["bench"] == "mmvu":
        g["discipline"] = MMVU_DISCIPLINES.get(g["subject"], "")
    return g


def _ours(rec: dict):
    return score_lmms(
        rec["bench"], rec["response"], rec["answer"], rec["options"], item_id=rec["id"]
    )


def test_the_fixture_covers_at_least_500_responses_of_the_current_corpus() -> None:
    assert len(ITEMS) >= 500
    assert [
        x["record"] for x in ITEMS
    ] == corpus()  # regenerate the fixture when the corpus changes
    assert {x["bench"] for x in ITEMS} == {
        "videomme",
        "longvideobench",
        "lvbench",
        "mlvu",
        "mmvu",
        "charades_sta",
    }


def test_reasoning_tags_are_stripped_like_lmms_eval() -> None:
    bad = [
        x["id"] for x in ITEMS if L.strip_reasoning_tags(x["record"]["response"]) != x["stripped"]
    ]
    assert bad == []


def test_every_non_random_item_gets_lmms_evals_prediction_and_score() -> None:
    mismatches, n_random = [], 0
    for x in ITEMS:
        got = _ours(x["record"])
        if x["random"]:
            n_random += 1
            letters = option_letters(x["record"]["options"])
            assert got.random and got.pred in letters, x["id"]
            continue
        want_pred = x["pred"]
        if x["bench"] == "charades_sta":
            want_pred = (
                "" if want_pred is None else f"[{float(want_pred[0])}, {float(want_pred[1])}]"
            )
        if (got.pred, got.score) != (want_pred, float(x["score"])) or got.random:
            mismatches.append((x["id"], got, want_pred, x["score"]))
    assert mismatches == []
    assert 0 < n_random < len(ITEMS) // 10  # the fallback is exercised, and rare


def test_aggregates_equal_lmms_evals_headlines() -> None:
    by_bench: dict[str, list[ScoredItem]] = {}
    for x in ITEMS:
        rec = x["record"]
        key = f"{rec['groups'].get('video')}>>>{rec['groups'].get('caption')}>>>{rec['answer']}"
        by_bench.setdefault(rec["bench"], []).append(
            ScoredItem(rec["id"], _ours(rec), _groups(rec), key=key)
        )
    assert aggregate("videomme", by_bench["videomme"])["headline"] == pytest.approx(
        AGGREGATES["videomme"], abs=1e-9
    )
    assert aggregate("mlvu", by_bench["mlvu"])["headline"] == pytest.approx(
        AGGREGATES["mlvu"], abs=1e-9
    )
    assert aggregate("mmvu", by_bench["mmvu"])["headline"] == pytest.approx(
        AGGREGATES["mmvu"], abs=1e-9
    )
    ch = aggregate("charades_sta", by_bench["charades_sta"])
    want = AGGREGATES["charades_sta"]
    assert [ch["R@0.3"], ch["R@0.5"], ch["R@0.7"], ch["mIoU"]] == pytest.approx(
        [want["IOU@3"], want["IOU@5"], want["IOU@7"], want["mIOU"]], abs=1e-9
    )
    assert ch["n_scored"] < len(
        by_bench["charades_sta"]
    )  # a duplicated (video, sentence, interval) counts once


def test_the_fixture_is_what_the_installed_lmms_eval_computes() -> None:
    pytest.importorskip(
        "lmms_eval.tasks.charades_sta.utils", reason="lmms-eval not installed (optional)"
    )
    live = lmms_outputs(corpus())
    stored = [{k: v for k, v in x.items() if k != "record"} for x in ITEMS]
    assert [x for x in live if "aggregate" not in x] == stored
    assert all(x["pred"] != RANDOM for x in stored if not x["random"])
