"""lmms-eval's rules on hand-worked examples (the quirks that move published numbers), and the
per-benchmark aggregation."""

from __future__ import annotations

import random

import pytest

from paravt.eval.benchmarks import lmms_rules as L
from paravt.eval.benchmarks.base import Scored, ScoredItem
from paravt.eval.benchmarks.scoring import aggregate, score_lmms, score_paravt
from paravt.video import overview_count


@pytest.mark.parametrize(
    "text, want",
    [
        ("<think>It could be A.</think>B", "B"),
        (
            "It could be A.</think>\nC",
            "C",
        ),  # open tag pre-filled by the template: keep after the close
        ("<think>unclosed, B", "<think>unclosed, B"),  # never closed: untouched
        ("<think>1</think>x<analysis>2</analysis>y", "xy"),
        ("<THINK>a</THINK>b", "<THINK>a</THINK>b"),  # case-sensitive
    ],
)
def test_reasoning_tags_are_stripped_like_lmms_evals_default(text: str, want: str) -> None:
    assert L.strip_reasoning_tags(text) == want


@pytest.mark.parametrize(
    "text, want",
    [
        (
            "A person walks in. The answer is C",
            "A",
        ),  # a leading standalone letter outranks everything
        (
            "The answer is (B)",
            "B",
        ),  # the phrase (rank 7) beats the parentheses (rank 6); same letter
        (
            "Options (A) and (C) fail; D. is right",
            "C",
        ),  # "(X)" (rank 6) outranks "X." (rank 5); last (X) wins
        ("I think so", ""),  # no A-D anywhere
        ("Because", "B"),  # nothing ranked: the fallback takes any capital, inside a word too
        ("(b)", ""),  # lower-case letters are not choices
        ("Answer: B", "B"),
    ],
)
def test_the_ranked_mcq_extractor(text: str, want: str) -> None:
    assert L.extract_mcq_answer(text, L.MCQ_ABCD) == want


def test_longvideobench_takes_the_first_capital_a_to_e_and_seeds_its_fallback_per_item() -> None:
    assert L.parse_lvb_response("Based on the video, D", list("ABCD"), random.Random(0)) == (
        "B",
        False,
    )
    assert L.parse_lvb_response("The best answer is E", list("ABCD"), random.Random(0)) == (
        "E",
        False,
    )
    one = score_lmms("longvideobench", "no idea", "A", ["A. x", "B. y", "C. z"], item_id="q7")
    again = score_lmms("longvideobench", "no idea", "A", ["A. x", "B. y", "C. z"], item_id="q7")
    assert one.random and one == again and one.pred in "ABC"


def test_mmvu_counts_a_lowercase_article_as_the_letter() -> None:
    choices = {"A": "Ohm", "B": "Hooke"}
    assert L.mmvu_mcq_correct("a spring obeys it", "A", choices)
    assert L.mmvu_mcq_correct("it is hooke's law", "B", choices)  # the choice text, lower-cased
    assert not L.mmvu_mcq_correct("it is Ohm", "B", choices)


@pytest.mark.parametrize(
    "text, want",
    [
        ("The event happens in 2.5 - 6 seconds.", [[2.5, 6.0]]),
        ("from 8 to 3", [[3.0, 8.0]]),  # "to" becomes "-"; reversed pairs are swapped
        (
            "The person stops at 3 and starts at 7",
            [],
        ),  # "stops" → "s-ps": one number per sentence, unpaired
        ("starts at 00:01:05 and ends at 00:01:09", [[65.0, 69.0]]),
        (
            "[1.5, 4.0]",
            [],
        ),  # no dash, no clock: only the FIRST number of the one sentence → unpaired
    ],
)
def test_charades_extract_time(text: str, want: list) -> None:
    assert L.extract_time(text) == want


def test_charades_scores_zero_without_exactly_one_interval_and_iou_otherwise() -> None:
    assert score_lmms("charades_sta", "I do not know", "[1.0, 3.0]") == Scored("", 0.0)
    got = score_lmms("charades_sta", "<think>hmm</think>It happens in 2 - 4 s", "[1.0, 3.0]")
    assert got.pred == "[2.0, 4.0]" and got.score == pytest.approx(1 / 3)  # overlap 1, hull 3
    assert score_paravt(
        "charades_sta", "<answer>[2, 4]</answer>", "[1.0, 3.0]"
    ).score == pytest.approx(1 / 3)


def _item(i: int, score: float, **groups: str) -> ScoredItem:
    return ScoredItem(str(i), Scored("A", score), groups)


def test_mlvu_is_the_macro_average_over_its_fixed_task_types() -> None:
    items = [
        _item(0, 1.0, task_type="count"),
        _item(1, 0.0, task_type="plotQA"),
        _item(2, 0.0, task_type="plotQA"),
    ]
    agg = aggregate("mlvu", items)
    assert agg["headline"] == pytest.approx(100 / 7)  # count 100, plotQA 0, five absent types 0
    assert agg["micro"] == pytest.approx(100 / 3)


def test_videomme_is_micro_with_a_duration_breakdown() -> None:
    items = [
        _item(0, 1.0, duration="short"),
        _item(1, 0.0, duration="long"),
        _item(2, 1.0, duration="long"),
    ]
    agg = aggregate("videomme", items)
    assert agg["headline"] == pytest.approx(200 / 3)
    assert agg["by_duration"] == {"long": {"n": 2, "acc": 50.0}, "short": {"n": 1, "acc": 100.0}}


def test_mmvu_counts_only_mapped_subjects_and_charades_merges_duplicate_keys() -> None:
    items = [
        _item(0, 1.0, subject="Law", discipline="Humanities_and_Social_Science"),
        _item(1, 0.0, subject="Physics", discipline=""),
    ]
    assert aggregate("mmvu", items)["headline"] == 100.0
    ch = [
        ScoredItem("a", Scored("[0.0, 1.0]", 0.6), key="v>>>s>>>[0, 1]"),
        ScoredItem("b", Scored("[0.0, 1.0]", 0.2), key="v>>>s>>>[0, 1]"),
        ScoredItem("c", Scored("", 0.0), key="w>>>s>>>[0, 1]"),
    ]
    agg = aggregate("charades_sta", ch)
    assert (agg["n_scored"], agg["mIoU"], agg["R@0.3"], agg["no_interval"]) == (
        2,
        pytest.approx(10.0),
        0.0,
        1,
    )


def test_the_overview_is_one_frame_per_second_capped_at_64() -> None:
    # frame_count's one rounding rule: round(0.4) = 0 → at least 1; round(63.9) = 64; 200 s → the
    # cap
    assert [overview_count(64, d, 1.0) for d in (0.4, 3.0, 63.9, 200.0)] == [1, 3, 64, 64]
    assert [overview_count(64, d, 1.0) for d in (2.5, 3.5, 10.49)] == [2, 4, 10]  # halves to even
    assert (
        overview_count(0, 200.0, 1.0) == 0 and overview_count(16, 200.0) == 16
    )  # metadata only; no rate
