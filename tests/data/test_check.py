from __future__ import annotations

from data_traces import DURATION, answer, call_turn, extra, head, parallel, results

from paravt.data.check import check_row
from paravt.data.rows import Message, SFTRow, TextPart, VideoPart

W = [(0.0, 40.0), (40.0, 80.0)]


def _rules(row: SFTRow) -> set[str]:
    return {v.rule for v in check_row(row)}


def _good() -> list[Message]:
    return [
        *head(),
        call_turn("Search two windows.", W),
        results(W, ["nothing", "a blue flash at 50 s"]),
        answer(),
    ]


def test_a_clean_parallel_trace_passes() -> None:
    assert check_row(parallel(_good())) == []


def test_non_strict_json_call_is_caught() -> None:
    bad = Message(
        "assistant",
        "<think>\nlook\n</think>\n<tool_call>\n{'name': 'crop_video', 'arguments': "
        "{'start_time': 0, 'end_time': 40}}\n</tool_call>",
    )
    row = parallel([*head(), bad, results([W[0]], ["x"]), answer()])
    assert "json" in _rules(row)


def test_window_outside_the_video_or_reversed_is_caught() -> None:
    for w in [(100.0, 130.0), (50.0, 40.0)]:
        row = parallel([*head(), call_turn("look", [w]), results([w], ["x"]), answer()])
        assert "window" in _rules(row), w


def test_duplicate_window_across_turns_is_caught() -> None:
    msgs = [
        *head(),
        call_turn("a", [W[0]]),
        results([W[0]], ["x"]),
        call_turn("b", [W[0]]),
        results([W[0]], ["x"]),
        answer(),
    ]
    assert "duplicate" in _rules(parallel(msgs))


def test_visual_budget_floor_and_fps_cap_are_enforced() -> None:
    short = (10.0, 12.0)  # 2 s at 1 fps → 2 frames < floor 4
    assert "budget" in _rules(
        parallel([*head(), call_turn("a", [short]), results([short], ["x"]), answer()])
    )
    dense = parallel(
        [Message("system", "s"), Message("user", (VideoPart("v.mp4", 10.0, 20.0, 16),)), answer()]
    )
    assert "budget" in _rules(dense)  # 16 frames over 10 s = 1.6 fps > 1
    overview = parallel(
        [
            Message("system", "s"),
            Message("user", (VideoPart("v.mp4", 0.0, DURATION, 256),)),
            answer(),
        ]
    )
    assert "budget" not in _rules(overview)  # the whole-video overview is exempt


def test_tag_order_violations_are_caught() -> None:
    no_prefix = Message("assistant", "I think B\n<answer>B</answer>")
    assert "tags" in _rules(parallel([*head(), no_prefix]))
    ends_with_call = [*head(), call_turn("a", W), results(W, ["x", "y"])]
    assert "tags" in _rules(parallel(ends_with_call))
    both = Message(
        "assistant",
        '<think>\nx\n</think>\n<tool_call>\n{"name": "crop_video", "arguments": {"start_time": '
        '0, "end_time": 40}}\n</tool_call><answer>B</answer>',
    )
    assert "tags" in _rules(parallel([*head(), both, results([W[0]], ["x"]), answer()]))
    two_calls_sequential = parallel(_good(), mode="sequential")
    assert "tags" in _rules(two_calls_sequential)


def test_result_lines_must_match_the_calls() -> None:
    msgs = [*head(), call_turn("a", W), results([W[0]], ["only one"]), answer()]
    assert "tool_response" in _rules(parallel(msgs))
    msgs = [*head(), call_turn("a", W), results([(0.0, 40.0), (50.0, 80.0)], ["x", "y"]), answer()]
    assert "tool_response" in _rules(parallel(msgs))


def test_wrong_final_answer_is_caught() -> None:
    assert "answer" in _rules(parallel(_good(), ans="A"))


def test_rows_other_than_main_traces_only_get_part_checks() -> None:
    sub = SFTRow(
        "s",
        "sub",
        "sub",
        (
            Message("user", (VideoPart("v.mp4", 0.0, 40.0, 16), TextPart("Q"))),
            Message("assistant", "Nothing brief appears in this window."),
        ),
        ("v.mp4",),
        extra(),
    )
    assert check_row(sub) == []


def _fs(think: str, s: float, e: float, n: int, r: float = 0.5) -> Message:
    from paravt.protocol import tags as T

    args = {"start_time": s, "end_time": e, "nframes": n, "resize": r}
    return Message(
        "assistant", T.render_tool_turn(think, [T.render_tool_call("frame_select", args)])
    )


def test_frame_select_traces_pass_in_sequential_mode_only() -> None:
    msgs = [
        *head(),
        _fs("scan", 0, DURATION, 15),
        results([(0, DURATION)], ["x"]),
        _fs("rescan denser", 0, DURATION, 45),
        results([(0, DURATION)], ["y"]),
        answer(),
    ]
    assert check_row(parallel(msgs, mode="sequential")) == []  # a denser rescan is not a duplicate
    assert "json" in _rules(parallel(msgs))  # parallel traces use crop_video only


def test_frame_select_rate_and_identical_repeat_are_caught() -> None:
    fast = [*head(), _fs("zoom", 50, 60, 20), results([(50, 60)], ["x"]), answer()]
    assert "budget" in _rules(parallel(fast, mode="sequential"))  # 20 frames over 10 s = 2 fps
    same = [
        *head(),
        _fs("a", 50, 60, 5),
        results([(50, 60)], ["x"]),
        _fs("b", 50, 60, 5),
        results([(50, 60)], ["x"]),
        answer(),
    ]
    assert "duplicate" in _rules(parallel(same, mode="sequential"))
