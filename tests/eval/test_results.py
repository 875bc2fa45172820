from pathlib import Path

import pytest

from paravt.agent.tally import TokenRow
from paravt.errors import DataError
from paravt.eval.results import (
    CallRow,
    ResultRow,
    TranscriptTurn,
    append_result,
    finished_ids,
    load_results,
)


def _row(i: str, mode: str = "parallel", **kw) -> ResultRow:
    base = dict(
        id=i,
        mode=mode,
        task="mcq",
        subset="s",
        nframes=16,
        video="/v.mp4",
        duration=30.0,
        question="Q?",
        options=("A. x", "B. y"),
        answer="B",
        prediction="B",
        score=1.0,
        correct=True,
        calls=(CallRow("crop_video", 1.0, 5.0, True, None, "red"),),
        n_calls=1,
        tokens=TokenRow(10, 20, 30, 40, 50),
        latency_s=0.5,
        tool_necessary=True,
        transcript=(TranscriptTurn("assistant", "<answer>B</answer>"),),
    )
    base.update(kw)
    return ResultRow(**base)


def test_row_round_trips_through_json_with_nested_records() -> None:
    row = _row("a")
    line = row.to_json()
    assert "\n" not in line
    back = ResultRow.from_json(line)
    assert back == row
    assert back.tokens.total_input == 10 + 20 + 30 + 40 and back.tokens.main_input == 30


def test_append_writes_one_line_per_row_and_load_keeps_order(tmp_path: Path) -> None:
    p = tmp_path / "e" / "results.jsonl"
    for i in ("a", "b", "c"):
        append_result(p, _row(i))
    assert len(p.read_text().splitlines()) == 3
    assert [r.id for r in load_results(p)] == ["a", "b", "c"]


def test_truncated_last_line_is_skipped_and_next_append_stays_parseable(tmp_path: Path) -> None:
    p = tmp_path / "results.jsonl"
    append_result(p, _row("a"))
    with p.open("a") as f:  # a run killed mid-write
        f.write(_row("b").to_json()[:40])
    assert [r.id for r in load_results(p)] == ["a"]
    append_result(p, _row("c"))  # the resumed run
    assert [r.id for r in load_results(p)] == ["a", "c"]


def test_finished_ids_are_per_mode_and_empty_for_a_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "results.jsonl"
    assert finished_ids(p, "parallel") == set()
    append_result(p, _row("a", "parallel"))
    append_result(p, _row("b", "sequential"))
    append_result(p, _row("c", "parallel"))
    assert finished_ids(p, "parallel") == {"a", "c"}
    assert finished_ids(p, "sequential") == {"b"}


def test_row_missing_a_required_field_is_a_data_error(tmp_path: Path) -> None:
    p = tmp_path / "results.jsonl"
    p.write_text('{"id": "a", "mode": "parallel", "task": "mcq", "nframes": 16}\n')
    with pytest.raises(DataError, match="score"):
        load_results(p)
