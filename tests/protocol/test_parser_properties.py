"""Property tests over generated malformed outputs: the parser never raises and accounts for
every block opening."""

import math

from hypothesis import given, settings, strategies as st

from paravt.protocol import tags as T
from paravt.protocol.answer import extract_answer, is_degenerate
from paravt.protocol.parser import parse_calls
from paravt.protocol.stats import format_stats
from paravt.protocol.validate import validate_calls

FRAGMENTS = [
    *T.PROTOCOL_TAGS,
    T.IM_START,
    T.IM_END,
    "<tool_call",
    "tool_call>",
    "</tool_",
    "<",
    '{"name": "crop_video", "arguments": {"start_time": 10, "end_time": 20}}',
    '{"name": "crop_video", "arguments": {',
    '"start_time": "1:20"',
    '"end_time": 1e999',
    "}",
    "{",
    "]",
    "crop_video(80, 150)",
    'crop_video("v.mp4", 1:20, 2:30)',
    "crop_video(start_time=-5, end_time=9e9)",
    "print(crop_video(",
    "'",
    '"',
    ",",
    ")",
    "(",
    "```json\n",
    "```",
    "\n",
    " ",
    "A",
    "B.",
    "[3, 7]",
    "The answer is C",
    "视频",
    "🎬",
    "\u0000",
    "\ufeff",
    "٣",
    "NaN",
    "None",
    "True",
]
texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=30).map(
    "".join
)


@settings(max_examples=1500, deadline=None)
@given(texts, st.booleans())
def test_parser_never_raises_and_accounts_for_every_opening(text: str, execute: bool) -> None:
    res = parse_calls(text, execute_tool_code=execute)
    n_call, n_code = text.count(T.TOOL_CALL_OPEN), text.count(T.TOOL_CODE_OPEN)
    assert res.n_tool_call == n_call and res.n_tool_code == n_code
    assert len(res.calls) == n_call + (n_code if execute else 0)
    assert [c.index for c in res.calls] == list(range(len(res.calls)))
    for c in res.calls:
        assert c.error is not None or (c.closed and c.name is not None)
        assert "video_path" not in c.arguments
        for key in ("start_time", "end_time"):
            if c.error is None and key in c.arguments:
                assert isinstance(c.arguments[key], float) and math.isfinite(c.arguments[key])


@settings(max_examples=800, deadline=None)
@given(texts, st.floats(1, 1000), st.integers(1, 8), st.floats(0, 5))
def test_validated_windows_obey_every_limit(
    text: str, duration: float, k_max: int, min_w: float
) -> None:
    out = validate_calls(
        parse_calls(text).calls,
        duration=duration,
        k_max=k_max,
        min_window=min_w,
        known_tools={"crop_video"},
    )
    valid = [c for c in out if c.error is None]
    assert len(valid) <= k_max
    windows = [c.window for c in valid]
    assert len(set(windows)) == len(windows)
    for w in windows:
        assert w is not None and 0 <= w[0] < w[1] <= duration and w[1] - w[0] >= min_w


@settings(max_examples=800, deadline=None)
@given(texts)
def test_answer_stats_and_degenerate_never_raise(text: str) -> None:
    ans = extract_answer(text)
    assert ans is None or (ans == ans.strip() and ans)
    s = format_stats(text)
    assert s.n_tool_call == T.strip_observations(text).count(T.TOOL_CALL_OPEN)
    assert isinstance(is_degenerate(text), bool)
