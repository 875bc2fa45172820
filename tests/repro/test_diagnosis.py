"""The parallel pipeline's diagnosis (paravt/repro/diagnosis.py) on hand-made result rows."""

from __future__ import annotations

from paravt.eval.results import CallRow, ResultRow
from paravt.repro.diagnosis import clean, diagnose, reports


def _row(id_: str, calls: list[CallRow], correct: bool, mode: str = "parallel") -> ResultRow:
    return ResultRow(
        id=id_,
        mode=mode,
        task="mcq",
        subset="s",
        nframes=4,
        video="v.mp4",
        duration=120.0,
        question="q",
        options=None,
        answer="A",
        prediction="A" if correct else "B",
        score=float(correct),
        correct=correct,
        calls=tuple(calls),
        n_calls=len(calls),
    )


NOTHING = "Nothing brief appears in this window."


def test_reports_reads_the_summary() -> None:
    assert reports("A red flash appears from 41 s to 45 s.")
    assert not reports(NOTHING) and not reports("  ") and not reports("error: window too short")


def test_diagnosis_counts_coverage_recall_false_reports_and_accuracy() -> None:
    needles = {"a": (50.0, 55.0), "b": (10.0, 14.0), "c": (100.0, 104.0)}
    rows = [
        # a: the needle's window reports it, another window falsely reports: answered right
        _row(
            "a",
            [
                CallRow("crop_video", 0, 40, True, summary="A flash appears."),
                CallRow("crop_video", 40, 80, True, summary="A flash appears at 52 s."),
            ],
            True,
        ),
        # b: the needle's window says nothing (a recall miss); the other stays quiet
        _row(
            "b",
            [
                CallRow("crop_video", 0, 40, True, summary=NOTHING),
                CallRow("crop_video", 40, 80, True, summary=NOTHING),
            ],
            False,
        ),
        # c: no window covers the needle; a failed call does not count as a window
        _row(
            "c",
            [
                CallRow("crop_video", 0, 60, True, summary=NOTHING),
                CallRow("crop_video", 90, 120, False, error="bad", summary=""),
            ],
            False,
        ),
        _row("a", [], True),  # no window at all: not in the diagnosis
        _row("a", [CallRow("crop_video", 40, 80, True, summary="x")], True, mode="sequential"),
    ]
    d = diagnose(rows, needles)
    assert d["episodes_with_windows"] == 3
    assert d["coverage"] == {"rate": 2 / 3, "hits": 2, "of": 3}
    assert d["recall"] == {"rate": 0.5, "hits": 1, "of": 2}
    assert d["false_reports"] == {
        "rate": 1 / 3,
        "hits": 1,
        "of": 3,
    }  # a [0,40], b [40,80], c [0,60]
    assert d["acc_given_report"] == {"rate": 1.0, "hits": 1, "of": 1}
    assert d["clean"] == {"rate": 1.0, "hits": 5, "of": 5}  # every executed window's one line


def test_no_parallel_episode_gives_empty_rates() -> None:
    d = diagnose([], {})
    assert d["coverage"]["rate"] is None and d["episodes_with_windows"] == 0


def test_timed_right_reads_the_stated_span_of_a_report() -> None:
    from paravt.repro.diagnosis import timed_right

    assert timed_right("A red flash appears from 51 s to 53 s.", (50.0, 55.0))
    assert timed_right(
        "A red flash appears from 55.5 s to 56 s.", (50.0, 55.0)
    )  # within the 1 s slack
    assert not timed_right("A large digit 1 appears from 111 s to 113 s.", (50.0, 55.0))
    assert not timed_right("A flash appears.", (50.0, 55.0))  # no span stated
    assert timed_right(
        "A large digit 3 appears at 54.5 s.", (50.0, 55.0)
    )  # one stamp (perception.describe_clip)
    assert not timed_right("A large digit 3 appears at 57.5 s.", (50.0, 55.0))
    needles = {"a": (50.0, 55.0)}
    rows = [
        _row(
            "a",
            [
                CallRow("crop_video", 40, 80, True, summary="A flash appears from 52 s to 54 s."),
                CallRow("crop_video", 45, 60, True, summary="A flash appears from 111 s to 111 s."),
            ],
            True,
        )
    ]
    assert diagnose(rows, needles)["timed_right"] == {"rate": 0.5, "hits": 1, "of": 2}


def test_a_summary_that_leaks_the_main_agents_format_is_not_clean() -> None:
    """Raw sub-agent replies of a cold start trained without sub-agent rows (docs/repro-log.md,
    2026-12-06 g): they still report, so recall counts them, but they run on in the main agent's
    format."""
    leaks = [
        "A full-frame blue flash appears at 65.0 s.\n</think>\n<answer>[65, 65]</answer>",
        "A full-frame blue flash appears from 65.5 s to 65.5 s.\nA full-frame blue flash appears at"
        " 85.5 s.",
        "A full-frame cyan flash appears at 65.0 s.</answer>",
        "A full-frame cyan flash appears at 65.0 s. The answer is cyan [truncated]",
        "A flash appears.<|im_end|>",
        "",
    ]
    fine = ["A full-frame blue flash appears at 65.0 s.", NOTHING, "A red flash (x < y) appears."]
    assert [clean(s) for s in leaks] == [False] * len(leaks)
    assert [clean(s) for s in fine] == [True] * len(fine)
    rows = [
        _row(
            "a",
            [
                CallRow("crop_video", 0, 40, True, summary=fine[1]),
                CallRow("crop_video", 40, 80, True, summary=leaks[0]),
                CallRow("crop_video", 80, 90, False, error="bad", summary=""),
            ],
            True,
        )
    ]
    d = diagnose(rows, {"a": (60.0, 66.0)})
    assert d["recall"]["rate"] == 1.0 and d["clean"] == {"rate": 0.5, "hits": 1, "of": 2}
