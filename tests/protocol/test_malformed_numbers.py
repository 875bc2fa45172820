"""Issue 13 item 8 (parser side): non-finite or overflowing numbers in a call are the call's error.

Reproduced break: ``NaN`` / ``Infinity`` / ``1e999`` times and a 400-digit integer were reported as
an error but KEPT in ``arguments``, so ``call.window`` returned ``(nan, 5.0)`` (or raised
OverflowError) and rendering the error line (``tags.fmt_time``) raised ValueError/OverflowError,
which ended the episode.
"""

from __future__ import annotations

import math

import pytest

from paravt.protocol import tags as T
from paravt.protocol.parser import parse_calls
from paravt.protocol.validate import validate_calls

BIG = "9" * 400
MALFORMED = [
    ('{"name": "crop_video", "arguments": {"start_time": NaN, "end_time": 5}}', "start_time"),
    ('{"name": "crop_video", "arguments": {"start_time": 1, "end_time": Infinity}}', "end_time"),
    ('{"name": "crop_video", "arguments": {"start_time": -Infinity, "end_time": 4}}', "start_time"),
    ('{"name": "crop_video", "arguments": {"start_time": 1e999, "end_time": 2e999}}', "start_time"),
    ("crop_video(1e999, 2e999)", "start_time"),
    (f"crop_video(1, {BIG})", "end_time"),
    (f'{{"name": "crop_video", "arguments": {{"start_time": 1, "end_time": {BIG}}}}}', "end_time"),
    (f"crop_video(start_time=-{BIG}, end_time=3)", "start_time"),
]


@pytest.mark.parametrize("body, bad_key", MALFORMED)
def test_non_finite_or_huge_time_is_a_call_error_and_is_not_kept(body: str, bad_key: str) -> None:
    (call,) = parse_calls(f"<tool_call>{body}</tool_call>").calls
    assert call.name == "crop_video" and call.error is not None
    assert call.error.startswith(bad_key) and "finite" in call.error
    assert len(call.error) < 200  # a 400-digit value is not echoed whole
    assert bad_key not in call.arguments  # the invalid value is gone, not kept beside the error
    assert call.window is None
    (checked,) = validate_calls(
        [call], duration=10.0, k_max=4, min_window=1.0, known_tools={"crop_video"}
    )
    assert checked.error == call.error and checked.window is None


def test_valid_neighbour_call_still_runs_beside_a_malformed_one() -> None:
    text = (
        "<tool_call>crop_video(1e999, 2e999)</tool_call>"
        '<tool_call>{"name": "crop_video", "arguments": {"start_time": 2, "end_time": '
        "6}}</tool_call>"
    )
    bad, good = validate_calls(
        parse_calls(text).calls, duration=10.0, k_max=4, min_window=1.0, known_tools={"crop_video"}
    )
    assert bad.error is not None and good.error is None and good.window == (2.0, 6.0)


@pytest.mark.parametrize(
    "value", [math.nan, math.inf, -math.inf, 10**400], ids=["nan", "inf", "-inf", "1e400"]
)
def test_fmt_time_is_total(value: float) -> None:
    assert T.fmt_time(value) == "--:--"
    assert T.render_result_line(1, value, 5.0, "error: x") == "[1] --:--–00:05: error: x"


def test_fmt_time_still_formats_real_times() -> None:
    assert (T.fmt_time(0), T.fmt_time(79.6), T.fmt_time(3661), T.fmt_time(-3)) == (
        "00:00",
        "01:20",
        "1:01:01",
        "00:00",
    )
