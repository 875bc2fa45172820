"""``call_forms=release``: the turns where our reading of the authors' RL parser disagreed with
the release itself (release: paravt/rl/utils/tool_parser.py at cf55249, run side by side on a
seeded corpus of model turns). Each test: a hand-made turn in, the calls the release executes
out (name and window as its tool reads them), with the release's line that decides it."""

from __future__ import annotations

from paravt.protocol.parser import parse_calls
from paravt.protocol.prompts import CROP_VIDEO_SPEC, positional_params

POS = positional_params([CROP_VIDEO_SPEC])  # the RL toolset


def _code(*lines: str) -> str:
    return "<tool_code>\n" + "\n".join(lines) + "\n</tool_code>"


def _calls(text: str, at_end_of_turn: bool = True) -> list[tuple[str | None, dict]]:
    res = parse_calls(text, forms="release", positional=POS, at_end_of_turn=at_end_of_turn)
    return [(c.name, c.arguments) for c in res.calls]


def test_a_tool_code_line_that_is_not_python_is_not_a_call() -> None:
    """tool_parser.py:50-65: a line ``ast`` cannot read, even after the stray-quote repair, is
    skipped, so unquoted MM:SS never runs (the lenient splitter used to run 80-150)."""
    assert _calls(_code("crop_video(start_time=1:20, end_time=150)")) == []
    assert _calls(_code("crop_video(1:20, 2:30)"), at_end_of_turn=False) == []
    # quoted, it is Python: the tool gets the string, our times read it as 80 s
    assert _calls(_code("crop_video(start_time='1:20', end_time=150)")) == [
        ("crop_video", {"start_time": 80.0, "end_time": 150.0})
    ]
    # over two lines: each line alone is not a call (tool_parser.py:46-51)
    assert _calls(_code("crop_video(start_time=3,", "    end_time=8)")) == []


def test_the_stray_quote_repair_is_the_releases() -> None:
    """tool_parser.py:53-65: a line that does not parse loses a quote left before its closing
    parenthesis, or after it, and is read again: 10-20 runs. The paper is silent, so the release
    as it runs."""
    assert _calls(_code("crop_video(start_time=10, end_time=20')")) == [
        ("crop_video", {"start_time": 10.0, "end_time": 20.0})
    ]
    assert _calls(_code("crop_video(start_time=10, end_time=20)'  ")) == [
        ("crop_video", {"start_time": 10.0, "end_time": 20.0})
    ]
    # a line the repair cannot save stays skipped; a line that parses is never "repaired"
    assert _calls(_code("crop_video(start_time=1:20, end_time=20')")) == []
    assert _calls(_code("crop_video(start_time=10, end_time='20')")) == [
        ("crop_video", {"start_time": 10.0, "end_time": 20.0})
    ]


def test_positional_arguments_are_left_out_when_a_keyword_reads() -> None:
    """tool_parser.py:95-96: positional arguments are mapped only when no keyword argument was
    read, so ``crop_video(80, end_time=150)`` hands the tool only end_time (the call fails)."""
    assert _calls(_code("crop_video(80, end_time=150)")) == [("crop_video", {"end_time": 150.0})]
    # the paper's Appendix D 2: the path is positional, start/end keywords (aliases)
    assert _calls(_code('crop_video("video.mp4", start=80, end=150)')) == [
        ("crop_video", {"start_time": 80.0, "end_time": 150.0})
    ]


def test_an_argument_that_is_not_a_literal_is_left_out() -> None:
    """tool_parser.py:87-93, :98-104: a value ``literal_eval`` cannot read is dropped, the rest
    kept; a call left with nothing is not a call (:106). We used to turn the line into one call
    with a time error (the lenient splitter read ``t0`` as a string)."""
    assert _calls(_code("crop_video(start_time=t0, end_time=40)")) == [
        ("crop_video", {"end_time": 40.0})
    ]
    assert _calls(_code("crop_video(start_time=t0, end_time=t1)")) == []
    # a variable in the path's place: the release maps video_path (dropped), 80, 150; ours drops
    # the path and maps by our spec: the same window
    assert _calls(_code("crop_video(video, 80, 150)")) == [
        ("crop_video", {"start_time": 80.0, "end_time": 150.0})
    ]
    assert _calls(_code("crop_video(*[10, 20])")) == []


def test_keywords_of_a_tool_without_a_positional_map_make_a_call() -> None:
    """tool_parser.py:95-107: the release keeps the keywords of any name and drops positional
    arguments it cannot name, so ``zoom("v.mp4", start=1, end=5)`` is a call (it fails at the
    tool: the turn still has a call and the episode goes on). We used to skip it."""
    assert _calls(_code('zoom("v.mp4", start=1, end=5)')) == [
        ("zoom", {"start_time": 1.0, "end_time": 5.0})
    ]
    assert _calls(_code("zoom(1, 5)")) == []  # nothing it can name: no call


def test_a_wrapped_call_line_runs() -> None:
    """tool_parser.py:51 parses the whole line as an expression and :69-71 unwraps ``print``
    whatever else it is given; we used to skip both lines."""
    assert _calls(_code("(crop_video(1, 4))", "print(crop_video(6, 9), flush=True)")) == [
        ("crop_video", {"start_time": 1.0, "end_time": 4.0}),
        ("crop_video", {"start_time": 6.0, "end_time": 9.0}),
    ]


def test_a_json_name_is_looked_up_as_written() -> None:
    """tool_parser.py:136-137 hands the name as written; the release's registry has no
    " crop_video" (its manager.py:108-110), so the call is one that fails. per_call trims it."""
    text = '<tool_call>{"name": " crop_video", "arguments": {"start_time": 0, "end_time": 5}}'
    text += "</tool_call>"
    assert [c.name for c in parse_calls(text, forms="release").calls] == [" crop_video"]
    assert [c.name for c in parse_calls(text, forms="per_call").calls] == ["crop_video"]
