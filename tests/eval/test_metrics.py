import pytest

from paravt.agent.tally import TokenRow
from paravt.eval.metrics import compute_metrics, recall_at, tool_necessity_gap
from paravt.eval.results import CallRow, ResultRow


def _r(
    i: int,
    task: str,
    score: float,
    *,
    mode: str = "parallel",
    n_calls: int = 0,
    nframes: int = 16,
    subset: str = "a",
    nec: bool | None = None,
    tokens: TokenRow = TokenRow(),
    latency: float = 1.0,
    calls_ok: tuple[bool, ...] = (),
) -> ResultRow:
    calls = tuple(CallRow("crop_video", 0.0, 1.0, ok) for ok in calls_ok)
    return ResultRow(
        id=str(i),
        mode=mode,
        task=task,
        subset=subset,
        nframes=nframes,
        video="",
        duration=10.0,
        question="",
        options=None,
        answer="",
        prediction=None,
        score=score,
        correct=score >= 0.5,
        calls=calls,
        n_calls=n_calls,
        tokens=tokens,
        latency_s=latency,
        tool_necessary=nec,
    )


def test_recall_counts_ious_at_or_above_the_threshold() -> None:
    ious = [0.0, 0.3, 0.5, 0.69, 0.7, 0.9]
    assert recall_at(ious, 0.3) == pytest.approx(5 / 6)
    assert recall_at(ious, 0.5) == pytest.approx(4 / 6)
    assert recall_at(ious, 0.7) == pytest.approx(2 / 6)
    assert recall_at([], 0.5) is None


def test_task_metrics_by_hand() -> None:
    rows = [
        _r(1, "mcq", 1.0),
        _r(2, "mcq", 0.0),
        _r(3, "mcq", 1.0),
        _r(4, "mcq", 1.0),  # acc 3/4
        _r(5, "tvg", 0.2),
        _r(6, "tvg", 0.6),
        _r(7, "tvg", 0.8),  # mIoU 1.6/3; R@.3 2/3, R@.5 2/3, R@.7 1/3
        _r(8, "oe", 0.5),
        _r(9, "oe", 0.25),  # F1 0.375
    ]
    s = compute_metrics(rows)["summary"]
    assert s["n"] == 9
    assert s["mcq_acc"] == pytest.approx(0.75)
    assert s["tvg_miou"] == pytest.approx(1.6 / 3)
    assert (s["tvg_r@0.3"], s["tvg_r@0.5"], s["tvg_r@0.7"]) == pytest.approx((2 / 3, 2 / 3, 1 / 3))
    assert s["oe_f1"] == pytest.approx(0.375)
    assert s["score"] == pytest.approx((3 + 1.6 + 0.75) / 9)
    assert s["correct_rate"] == pytest.approx(6 / 9)  # 3 mcq + 0.6, 0.8 + 0.5


def test_tool_use_tokens_and_latency_by_hand() -> None:
    rows = [
        _r(1, "mcq", 1, n_calls=0, tokens=TokenRow(100, 50, 0, 0, 10), latency=1.0),
        _r(
            2,
            "mcq",
            1,
            n_calls=2,
            tokens=TokenRow(100, 80, 40, 20, 30),
            latency=2.0,
            calls_ok=(True, False),
        ),
        _r(
            3,
            "mcq",
            0,
            n_calls=4,
            tokens=TokenRow(100, 110, 80, 40, 50),
            latency=6.0,
            calls_ok=(True,) * 4,
        ),
    ]
    s = compute_metrics(rows)["summary"]
    assert s["mean_calls"] == pytest.approx(2.0)
    assert s["skip_tool_rate"] == pytest.approx(1 / 3)
    assert s["call_ok_rate"] == pytest.approx(5 / 6)
    assert s["tokens"]["main_input"] == pytest.approx((150 + 180 + 210) / 3)
    assert s["tokens"]["total_input"] == pytest.approx((150 + 240 + 330) / 3)
    assert s["tokens"]["generated"] == pytest.approx(30.0)
    assert s["latency_s"] == pytest.approx(3.0) and s["latency_p50_s"] == pytest.approx(2.0)


def test_breakdowns_by_mode_nframes_subset_and_tool_necessity() -> None:
    rows = [
        _r(1, "mcq", 1, mode="parallel", nframes=4, nec=True, subset="x"),
        _r(2, "mcq", 0, mode="parallel", nframes=64, nec=True, subset="y"),
        _r(3, "mcq", 1, mode="parallel", nframes=4, nec=False, subset="x"),
        _r(4, "mcq", 0, mode="none", nframes=4, nec=True, subset="x"),
        _r(5, "mcq", 1, mode="none", nframes=64, nec=False, subset="y"),
        _r(6, "tvg", 0.4, mode="none", nframes=64, nec=None, subset="y"),
    ]
    m = compute_metrics(rows)
    assert list(m["by_nframes"]) == ["4", "64"]  # numeric order, string keys
    assert m["by_nframes"]["4"]["score"] == pytest.approx(2 / 3)
    assert m["by_subset"]["y"]["n"] == 3
    assert m["by_tool_necessary"]["necessary"]["score"] == pytest.approx(1 / 3)
    assert m["by_tool_necessary"]["unnecessary"]["score"] == pytest.approx(1.0)
    assert m["tool_necessity_gap"] == pytest.approx(
        1 - 1 / 3
    )  # row 6 (unknown) is in neither group
    par, none = m["by_mode"]["parallel"], m["by_mode"]["none"]
    assert par["summary"]["mcq_acc"] == pytest.approx(2 / 3) and par["summary"]["tvg_miou"] is None
    assert par["tool_necessity_gap"] == pytest.approx(1 - 0.5)
    assert none["by_nframes"]["64"]["score"] == pytest.approx(1.4 / 2)
    assert tool_necessity_gap([r for r in rows if r.tool_necessary]) is None


def test_no_rows_gives_an_empty_summary() -> None:
    m = compute_metrics([])
    assert m["summary"] == {"n": 0, "n_failed": 0} and m["by_mode"] == {}
    assert m["tool_necessity_gap"] is None


def test_failed_rows_are_counted_apart_never_as_wrong_answers() -> None:
    """Issue 48 item 5: an errored row (score 0 as written) stays out of n and every mean."""
    from dataclasses import replace

    def failed(r: ResultRow) -> ResultRow:
        return replace(r, end_reason="error", error="HTTP 500")

    rows = [
        _r(1, "mcq", 1.0, nec=True),
        failed(_r(2, "mcq", 0.0, nec=False)),
        _r(3, "tvg", 0.6, nec=False, latency=3.0),
        failed(_r(4, "tvg", 0.0, nec=True, latency=100.0)),
        failed(_r(5, "oe", 0.0)),
    ]
    m = compute_metrics(rows)
    s = m["summary"]
    assert (s["n"], s["n_failed"]) == (2, 3) and s["end_reasons"] == {"answer": 2}
    assert s["score"] == pytest.approx(0.8) and s["correct_rate"] == 1.0
    assert (s["mcq_acc"], s["tvg_miou"], s["oe_f1"]) == (1.0, 0.6, None)
    assert s["latency_s"] == pytest.approx(2.0)
    assert m["by_task"]["oe"] == {"n": 0, "n_failed": 1}
    assert m["tool_necessity_gap"] == pytest.approx(0.6 - 1.0)
    assert m["by_mode"]["parallel"]["summary"]["n_failed"] == 3


def test_skip_tool_rate_counts_calls_written_as_training_does() -> None:
    from dataclasses import replace

    # row 1 wrote 2 calls on its last turn (never run: none recorded); row 2 wrote none
    rows = [
        replace(_r(1, "mcq", 1, n_calls=0), calls_written=2),
        replace(_r(2, "mcq", 1), calls_written=0),
    ]
    assert compute_metrics(rows)["summary"]["skip_tool_rate"] == pytest.approx(1 / 2)
    assert (
        compute_metrics([_r(3, "mcq", 1, n_calls=0)])["summary"]["skip_tool_rate"] == 1.0
    )  # old rows
