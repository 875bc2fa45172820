from __future__ import annotations

from data_traces import answer, call_turn, head, parallel, seq_obs

from paravt.data.check import check_row
from paravt.data.convert import convert_row, convert_rows, times_in
from paravt.protocol import tags as T
from paravt.protocol.parser import parse_calls


def _seq(windows, thinks, summaries):
    msgs = [*head()]
    for w, th, su in zip(windows, thinks, summaries):
        msgs += [call_turn(th, [w]), seq_obs(*w, su)]
    return parallel([*msgs, answer()], mode="sequential")


def test_independent_disjoint_calls_merge_into_one_turn_with_text_results() -> None:
    row = _seq(
        [(0, 20), (60, 80)],
        ["Check the start.", "Check the middle."],
        ["nothing", "a blue flash at 70 s"],
    )
    new, refused, merges = convert_row(row)
    assert merges == 1 and not refused and new.mode == "parallel"
    turns = [m for m in new.messages if m.role == "assistant"]
    assert len(turns) == 2
    calls = parse_calls(turns[0].text).calls
    assert [(c.arguments["start_time"], c.arguments["end_time"]) for c in calls] == [
        (0.0, 20.0),
        (60.0, 80.0),
    ]
    tool = new.messages[3]
    assert tool.text == T.render_tool_response_body(
        [
            T.render_result_line(1, 0, 20, "nothing"),
            T.render_result_line(2, 60, 80, "a blue flash at 70 s"),
        ]
    )
    assert check_row(new) == []


def test_dependent_calls_are_refused_with_their_reason() -> None:
    cases = {
        "contained": [(0, 40), (10, 20)],
        "overlap": [(0, 40), (30, 60)],
        "adjacent": [(0, 40), (40.5, 60)],
    }
    for reason, ws in cases.items():
        _, refused, merges = convert_row(_seq(ws, ["a", "b"], ["x", "y"]))
        assert merges == 0 and refused == {reason: 1}, reason
    cites = _seq(
        [(0, 20), (60, 80)],
        ["a", "Something moved at 00:15, so look later."],
        ["a shape at 00:15", "y"],
    )
    _, refused, merges = convert_row(cites)
    assert merges == 0 and refused == {"cites": 1}


def test_k_max_limits_a_merged_turn() -> None:
    ws = [(i * 10.0, i * 10.0 + 5) for i in range(5)]
    new, refused, merges = convert_row(_seq(ws, list("abcde"), list("vwxyz")), k_max=3)
    assert merges == 3 and refused == {"k_max": 1}
    assert [len(parse_calls(m.text).calls) for m in new.messages if m.role == "assistant"] == [
        3,
        2,
        0,
    ]


def test_missing_summary_falls_back_to_the_continuations_reasoning() -> None:
    row = _seq([(0, 20), (60, 80)], ["a", "b"], [None, None])
    new, _, _ = convert_row(row)
    lines = new.messages[3].text.split("\n")
    assert lines[0].endswith(": 16 frames")  # the observation's own text
    row2 = parallel(
        [
            *head(),
            call_turn("a", [(0, 20)]),
            seq_obs(0, 20, None).__class__("tool", "[1] 00:00–00:20: <video>"),
            answer("It was blue at 5 s."),
        ],
        mode="sequential",
    )
    new2, _, _ = convert_row(row2)
    assert new2.messages[3].text.endswith("It was blue at 5 s.")


def test_statistics_count_calls_per_turn_before_and_after() -> None:
    rows = [
        _seq([(0, 20), (60, 80)], ["a", "b"], ["x", "y"]),
        _seq([(0, 40), (10, 20)], ["a", "b"], ["x", "y"]),
    ]
    out, stats = convert_rows(rows)
    assert (stats.converted, stats.calls, stats.turns_before, stats.turns_after) == (2, 4, 4, 3)
    assert stats.calls_per_turn_before == 1.0 and abs(stats.calls_per_turn_after - 4 / 3) < 1e-9
    assert stats.refused == {"contained": 1} and stats.merges == 1


def test_times_in_reads_clocks_and_seconds_but_not_bare_numbers() -> None:
    assert times_in("at 01:10 and 5 s, window 3 of 7") == (70.0, 5.0)
