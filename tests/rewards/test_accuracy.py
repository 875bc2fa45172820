import pytest

from paravt.errors import DataError
from paravt.rewards.accuracy import accuracy, mcq_accuracy, mcq_letter, token_f1, tvg_iou

OPTS = ["red", "blue ball", "green", "yellow"]


@pytest.mark.parametrize(
    "pred",
    [
        "B",
        "(B)",
        "B.",
        "b",
        "B) blue ball",
        "B. blue ball",
        "The answer is B",
        "The answer is: (B)",
        "Option B",
        "blue ball",
        "Blue Ball.",
        "I think B",
        "Option A is wrong, the answer is B",
    ],
)
def test_mcq_reads_the_letter(pred: str) -> None:
    assert mcq_letter(pred, OPTS) == "B" and mcq_accuracy(pred, "B", OPTS) == 1.0


@pytest.mark.parametrize("pred", ["E", "A red ball", "A or B", "", "none of them", "ball"])
def test_mcq_unreadable_or_out_of_range_scores_zero(pred: str) -> None:
    assert mcq_accuracy(pred, "B", OPTS) == 0.0


def test_mcq_gold_may_be_the_option_text_and_none_pred_is_wrong() -> None:
    assert mcq_accuracy("B", "blue ball", OPTS) == 1.0
    assert mcq_accuracy(None, "B", OPTS) == 0.0


@pytest.mark.parametrize(
    "pred",
    [
        "[80, 150]",
        "80 - 150",
        "80 to 150",
        "from 80 s to 150 s",
        "01:20 - 02:30",
        "between 80 seconds and 150 seconds",
        "[80.0,150.0]",
    ],
)
def test_tvg_formats_all_read_the_same_interval(pred: str) -> None:
    # against [100, 200]: intersection 50, union 120
    assert tvg_iou(pred, "[100, 200]") == pytest.approx(50 / 120)
    assert tvg_iou(pred, [80, 150]) == 1.0


@pytest.mark.parametrize("pred", ["[150, 80]", "[80, 80]", "at 80", None, "", "[0, 10]"])
def test_tvg_reversed_empty_or_disjoint_scores_zero(pred) -> None:
    assert tvg_iou(pred, "[80, 150]") == 0.0


def test_token_f1_squad_normalisation() -> None:
    # pred tokens {cat, sat}; gold {cat, sat, on, mat}: P = 1, R = 1/2, F1 = 2/3
    assert token_f1("The cat sat.", "a cat sat on the mat") == pytest.approx(2 / 3)
    # Counter overlap: pred "red red" vs gold "red": common 1, P = 1/2, R = 1, F1 = 2/3
    assert token_f1("red red", "red") == pytest.approx(2 / 3)
    assert (
        token_f1("The!", "a") == 1.0 and token_f1("", "cat") == 0.0 and token_f1(None, "cat") == 0.0
    )


def test_accuracy_registry_by_task() -> None:
    assert accuracy("mcq", "B", "B", OPTS) == 1.0 and accuracy("tvg", "1-3", "[2, 3]") == 0.5
    with pytest.raises(DataError, match="mcq"):
        accuracy("bogus", "B", "B")
