import pytest

from paravt.errors import ToolCallError
from paravt.protocol.parser import ParsedCall, parse_calls
from paravt.protocol.prompts import (
    CROP_VIDEO_SPEC,
    FRAME_SELECT_SPEC,
    PYTHON_SPEC,
    ToolSpec,
    positional_params,
)
from paravt.protocol.tags import render_crop_call
from paravt.protocol.times import parse_time
from paravt.protocol.validate import validate_calls

KNOWN = {"crop_video"}


def one(text: str, **kw) -> ParsedCall:
    res = parse_calls(text, **kw)
    assert len(res.calls) == 1, res
    return res.calls[0]


@pytest.mark.parametrize(
    "value, seconds",
    [
        (80, 80.0),
        (80.5, 80.5),
        ("80", 80.0),
        ("80s", 80.0),
        ("80 s", 80.0),
        ("80 seconds", 80.0),
        ("80 sec", 80.0),
        ("1:20", 80.0),
        ("01:20", 80.0),
        ("90:00", 5400.0),
        ("1:20.5", 80.5),
        ("01:01:01", 3661.0),
        ("-5", -5.0),
    ],
)
def test_parse_time_accepts_seconds_and_clocks(value, seconds) -> None:
    assert parse_time(value) == seconds


@pytest.mark.parametrize("value", ["abc", "1:75", "1:60:00", "", True, None, float("nan"), [1]])
def test_parse_time_rejects_non_times(value) -> None:
    with pytest.raises(ToolCallError):
        parse_time(value)


def test_canonical_json_call_round_trips_through_the_parser() -> None:
    call = one("<think>x</think>\n" + render_crop_call(80, 150.5))
    assert (call.name, call.arguments, call.source, call.closed, call.error) == (
        "crop_video",
        {"start_time": 80.0, "end_time": 150.5},
        "json",
        True,
        None,
    )
    assert call.window == (80.0, 150.5)


@pytest.mark.parametrize(
    "body",
    [
        "crop_video(80, 150)",
        'crop_video("v.mp4", 80, 150)',
        "crop_video(start_time=80, end_time=150)",
        "crop_video(1:20, 2:30)",
        "print(crop_video(80, 150))",
        "tools.crop_video(start=80, end='150s')",
        "crop_video('01:20', '00:02:30')",
    ],
)
def test_python_style_calls_normalise_to_seconds(body: str) -> None:
    call = one(f"<tool_call>{body}</tool_call>")
    assert (call.name, call.arguments, call.source, call.error) == (
        "crop_video",
        {"start_time": 80.0, "end_time": 150.0},
        "python",
        None,
    )


@pytest.mark.parametrize(
    "body",
    [
        ' { "name" : "crop_video" , "arguments" : { "start_time" : "1:20", "end_time": 150 } } ',
        # trailing commas
        '{"name": "crop_video", "arguments": {"start_time": 80, "end_time": 150,},}',
        "{'name': 'crop_video', 'arguments': {'start_time': 80, 'end_time': 150}}",  # single quotes
        '```json\n{"name": "crop_video", "arguments": {"start_time": 80, "end_time": 150}}\n```',
        '{"name": "crop_video", "arguments": "{\\"start_time\\": 80, \\"end_time\\": 150}"}',
        '{"name": "crop_video", "parameters": {"start_time": 80, "end_time": 150}}',
    ],
)
def test_tolerated_json_variants(body: str) -> None:
    call = one(f"<tool_call>{body}</tool_call>")
    assert (call.arguments, call.source, call.error) == (
        {"start_time": 80.0, "end_time": 150.0},
        "json",
        None,
    )


def test_video_path_argument_is_dropped() -> None:
    call = one(
        '<tool_call>{"name": "crop_video", "arguments": {"video_path": "/x.mp4", '
        '"start_time": 1, "end_time": 2}}</tool_call>'
    )
    assert call.arguments == {"start_time": 1.0, "end_time": 2.0}


def test_unclosed_tool_call_is_a_call_with_an_error_and_the_next_one_survives() -> None:
    text = (
        '<tool_call>{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 2}}'
        + render_crop_call(3, 4)
    )
    res = parse_calls(text)
    first, second = res.calls
    assert not first.closed and first.error and "unclosed" in first.error
    assert first.name == "crop_video"  # parsed, but it cannot run
    assert second.closed and second.error is None and second.window == (3.0, 4.0)
    assert [c.index for c in res.calls] == [0, 1] and res.n_tool_call == 2


@pytest.mark.parametrize(
    "body, fragment",
    [
        ("", "empty"),
        ("not json", "not valid JSON"),
        ("[1, 2]", "one JSON object"),
        ('{"arguments": {}}', "name"),
        ('{"name": "crop_video", "arguments": [1]}', "must be an object"),
        (
            '{"name": "crop_video", "arguments": {"start_time": "soon", "end_time": 3}}',
            "start_time",
        ),
        ("crop_video(1, 2, 3)", "at most 2 positional"),
    ],
)
def test_malformed_bodies_become_errors(body: str, fragment: str) -> None:
    call = one(f"<tool_call>{body}</tool_call>")
    assert call.error is not None and fragment in call.error


def test_tool_code_is_counted_but_only_parsed_when_executed() -> None:
    text = "<tool_code>crop_video(10, 20)</tool_code>" + render_crop_call(30, 40)
    plain = parse_calls(text)
    assert plain.n_tool_code == 1 and [c.source for c in plain.calls] == ["json"]
    run = parse_calls(text, execute_tool_code=True)
    assert run.n_tool_code == 1
    assert [(c.source, c.window) for c in run.calls] == [
        ("tool_code", (10.0, 20.0)),
        ("json", (30.0, 40.0)),
    ]


def test_python_calls_in_free_text_are_not_calls() -> None:
    assert parse_calls("<think>maybe crop_video(1, 2)</think><answer>A</answer>").calls == ()


def test_validation_rules_each_call_independently() -> None:
    windows = [(0, 10), (0, 10), (-5, 3), (5, 5), (50, 200), (99.5, 130), (20, 30), (30, 40)]
    text = "".join(f"<tool_call>crop_video({a}, {b})</tool_call>" for a, b in windows)
    text += (
        '<tool_call>zoom(1)</tool_call><tool_call>{"name": "crop_video", "arguments": '
        "{}}</tool_call>"
    )
    out = validate_calls(
        parse_calls(text).calls, duration=100, k_max=4, min_window=1.0, known_tools=KNOWN
    )
    got = [(c.window, c.error.split(" ")[0] if c.error else None) for c in out]
    assert got == [
        ((0.0, 10.0), None),
        ((0.0, 10.0), "duplicate"),
        ((0.0, 3.0), None),  # clamped from -5, recorded clamped
        ((5.0, 5.0), "start_time"),
        ((50.0, 100.0), None),  # clamped from 200
        ((99.5, 100.0), "window"),  # 0.5 s after clamping < min_window 1 s
        ((20.0, 30.0), None),  # the 4th valid call
        ((30.0, 40.0), "beyond"),  # k_max = 4 valid calls already accepted
        (None, "unknown"),
        (None, "crop_video"),  # missing times
    ]


def test_validation_rejects_bad_limits() -> None:
    with pytest.raises(ToolCallError):
        validate_calls((), duration=0, k_max=8, min_window=1, known_tools=KNOWN)


def test_positional_names_come_from_each_tools_spec() -> None:
    spec = ToolSpec(
        "my_tool",
        "a toy",
        {"type": "object", "properties": {"lo": {"type": "number"}, "hi": {"type": "number"}}},
    )
    body = "<tool_call>my_tool(3, 9)</tool_call>"
    assert one(body, positional=positional_params([spec])).arguments == {"lo": 3, "hi": 9}
    assert one(body).arguments == {"args": [3, 9]}  # a tool the parser was not told about
    over = one("<tool_call>my_tool(3, 9, 4)</tool_call>", positional=positional_params([spec]))
    assert over.error == "my_tool takes at most 2 positional arguments (lo, hi), got 3"


def test_built_in_specs_give_the_positional_order_of_their_schemas() -> None:
    from paravt.tools.python_tool import PythonTool

    assert PythonTool.spec is PYTHON_SPEC  # the tool's spec is the protocol's (one definition)
    order = positional_params([CROP_VIDEO_SPEC, FRAME_SELECT_SPEC, PYTHON_SPEC])
    assert order == {
        "crop_video": ("start_time", "end_time"),
        "frame_select": ("start_time", "end_time", "nframes", "resize"),
        "python": ("code",),
    }
    assert one("<tool_call>frame_select(10, 20, 4, 0.5)</tool_call>").arguments == {
        "start_time": 10.0,
        "end_time": 20.0,
        "nframes": 4,
        "resize": 0.5,
    }  # the default: protocol's specs
    assert one('<tool_call>python("print(1)")</tool_call>', positional=order).arguments == {
        "code": "print(1)"
    }


def test_a_python_call_maps_to_code_without_a_toolset() -> None:
    """Callers that name no tools (offline repair, format statistics) map ``python("…")`` by the
    built-in spec, as an episode with the python tool does: {"code": …}, not {"args": […]}."""
    call = one('<tool_call>python("print(1)")</tool_call>')
    assert call.ok and call.name == "python" and call.arguments == {"code": "print(1)"}
    assert one("<tool_call>python(code='x = 2')</tool_call>").arguments == {"code": "x = 2"}
