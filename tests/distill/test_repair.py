"""Deterministic repair of teacher turns: one test per noisy form (module docstring of
paravt.distill.repair), each checking the canonical strict-JSON output and the change name."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from paravt.distill.repair import PLACEHOLDER_THINK, repair_turn
from paravt.protocol import tags as T
from paravt.protocol.parser import parse_calls

CROP = frozenset({"crop_video"})
THINK = "<think>Look at the middle.</think>\n"


def _body(text: str) -> dict:
    return json.loads(text.split(T.TOOL_CALL_OPEN)[1].split(T.TOOL_CALL_CLOSE)[0])


@pytest.mark.parametrize(
    ("raw", "change"),
    [
        (
            THINK + "<tool_call>{'name': 'crop_video', 'arguments': {'start_time': 80, 'end_time': "
            "150}}</tool_call>",
            "single_quotes",
        ),
        (
            THINK + '<tool_call>{"name": "crop_video", "arguments": {"start_time": 80, "end_time": '
            "150,},}</tool_call>",
            "trailing_comma",
        ),
        (THINK + '<tool_call>crop_video("video.mp4", 80, 150)</tool_call>', "python_call"),
        (THINK + "<tool_call>print(crop_video(start=80, end=150))</tool_call>", "python_call"),
        (THINK + "<tool_code>crop_video(80, 150)</tool_code>", "tool_code"),
        (
            THINK + 'Sure! Here is my call:\n<tool_call>{"name": "crop_video", "arguments": '
            '{"start_time": 80, '
            '"end_time": 150}}</tool_call>\nI hope this helps.',
            "prose",
        ),
        (THINK + "crop_video(80, 150)", "untagged_call"),
        (
            THINK + '{"name": "crop_video", "arguments": {"start_time": 80, "end_time": 150}}',
            "untagged_call",
        ),
        (
            THINK + '<tool_call>```json\n{"name": "crop_video", "arguments": {"start_time": 80, '
            '"end_time": 150}}\n```'
            "</tool_call>",
            "fence",
        ),
        (
            THINK + '<tool_call>{"name": "crop_video", "parameters": {"start": "01:20", "end": '
            '"02:30"}}</tool_call>',
            "args",
        ),
        (
            THINK
            + '<tool_call>{"name": "crop_video", "arguments": {"start_time": 80, "end_time": 150}}',
            "unclosed_call",
        ),
    ],
)
def test_noisy_call_becomes_one_strict_json_call(raw: str, change: str) -> None:
    turn = repair_turn(raw, CROP)
    assert turn.error is None and change in turn.changes
    text = turn.render()
    assert text.startswith(T.THINK_PREFIX + "Look at the middle.\n" + T.THINK_CLOSE)
    assert _body(text) == {"name": "crop_video", "arguments": {"start_time": 80, "end_time": 150}}
    assert [c.arguments for c in parse_calls(text).calls] == [
        {"start_time": 80.0, "end_time": 150.0}
    ]


def test_a_python_style_python_call_is_repaired_to_its_code_argument() -> None:
    """repair parses with the parser's defaults (no toolset): a teacher's ``python("…")`` becomes
    {"code": …}, the python tool's argument (it was {"args": [...]} while the default positional
    map lacked the python spec)."""
    turn = repair_turn(
        THINK + '<tool_call>python("print(video.info)")</tool_call>', frozenset({"python"})
    )
    assert turn.error is None and "python_call" in turn.changes
    assert _body(turn.render()) == {"name": "python", "arguments": {"code": "print(video.info)"}}


def test_a_clean_turn_needs_no_change() -> None:
    raw = (
        THINK + '<tool_call>{"name": "crop_video", "arguments": {"start_time": 80, "end_time": '
        "150}}</tool_call>"
    )
    turn = repair_turn(raw, CROP)
    assert turn.changes == () and turn.render() == T.render_tool_turn(
        "Look at the middle.", [T.render_crop_call(80, 150)]
    )


def test_prose_before_the_call_becomes_the_think_when_there_is_none() -> None:
    turn = repair_turn(
        "I should check 01:20 to 02:30.\n<tool_call>crop_video(80, 150)</tool_call>", CROP
    )
    assert turn.think == "I should check 01:20 to 02:30." and "prose_think" in turn.changes


def test_unclosed_think_is_cut_at_the_next_tag() -> None:
    turn = repair_turn("<think>Check the start.<tool_call>crop_video(0, 20)</tool_call>", CROP)
    assert (
        turn.think == "Check the start."
        and "unclosed_think" in turn.changes
        and len(turn.calls) == 1
    )


def test_answers_untagged_unclosed_and_with_calls() -> None:
    assert repair_turn("<think>It is red.</think>\nB", CROP).answer == "B"
    assert "answer_untagged" in repair_turn("<think>It is red.</think>\nB", CROP).changes
    unclosed = repair_turn("<think>It is red.</think>\n<answer>B", CROP)
    assert unclosed.answer == "B" and "unclosed_answer" in unclosed.changes
    both = repair_turn(THINK + "<tool_call>crop_video(0, 20)</tool_call><answer>B</answer>", CROP)
    assert both.answer is None and len(both.calls) == 1 and "answer_with_calls" in both.changes


def test_missing_think_gets_the_placeholder_and_angle_brackets_are_escaped() -> None:
    assert repair_turn("<answer>B</answer>", CROP).think == PLACEHOLDER_THINK
    turn = repair_turn("<think>x < y here</think><answer>B</answer>", CROP)
    assert turn.think == "x ‹ y here" and "think_angle" in turn.changes


@pytest.mark.parametrize(
    "raw",
    [
        THINK + "<tool_call>crop the video from 10 to 20</tool_call>",
        THINK + '<tool_call>{"name": "zoom", "arguments": {}}</tool_call>',
        THINK + '<tool_call>{"name": "crop_video", "arguments": {"start_time": "soon", "end_time": '
        "20}}</tool_call>",
    ],
)
def test_what_cannot_be_read_is_unrepairable(raw: str) -> None:
    turn = repair_turn(raw, CROP)
    assert turn.error is not None and not turn.calls


_PIECES = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_code>",
    "</tool_code>",
    "<answer>",
    "</answer>",
    "crop_video(",
    ")",
    "{'name': 'crop_video', 'arguments': {'start_time': 1, 'end_time': 9}}",
    ",",
    "}",
    "{",
    '"name"',
    "80",
    "1:20",
    "\n",
    " ",
    "x < y",
    "B",
    "print(",
    "```",
]


@given(st.lists(st.sampled_from(_PIECES) | st.text(max_size=5), max_size=14).map("".join))
@settings(max_examples=300, deadline=None)
def test_repair_never_raises_and_its_output_is_strict(text: str) -> None:
    turn = repair_turn(text, CROP)
    if turn.error is not None:
        return
    out = turn.render()
    again = repair_turn(out, CROP)  # canonical text is a fixed point: nothing left to repair
    assert again.error is None and again.changes == () and again.render() == out
    for call in parse_calls(out).calls:
        assert call.ok and call.source == "json" and call.name == "crop_video"
