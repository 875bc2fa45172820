"""Which calls a main turn holds under the two rule sets of ``rollout.call_forms`` (issue 46,
item 3): ``release`` (the authors' Hermes-style reader: all of a turn's JSON blocks or none,
``<tool_code>`` as the fallback) and ``per_call`` (each block judged alone, errors kept as calls).
Hand-made model turns in; the calls, their errors and their sources out."""

from __future__ import annotations

from paravt.protocol.parser import parse_calls


def _block(body: str) -> str:
    return f"<tool_call>\n{body}\n</tool_call>"


def _crop(start: object, end: object) -> str:
    args = f'{{"start_time": {start}, "end_time": {end}}}'
    return _block(f'{{"name": "crop_video", "arguments": {args}}}')


JSON_A, JSON_B, BROKEN = _crop(0, 5), _crop(5, 9), _crop(1, "")
PYCALL = "<tool_call>\ncrop_video(2, 7)\n</tool_call>"
CODE = "<tool_code>\ncrop_video(start_time=3, end_time=8)\n</tool_code>"
THINK = "I should look.\n</think>\n"


def _summary(text: str, forms: str, **kw) -> list[tuple[str | None, str, bool, tuple]]:
    res = parse_calls(text, forms=forms, **kw)  # type: ignore[arg-type]
    return [
        (c.name, c.source, c.ok, (c.arguments.get("start_time"), c.arguments.get("end_time")))
        for c in res.calls
    ]


def test_a_json_call_runs_under_both() -> None:
    for forms in ("release", "per_call"):
        assert _summary(THINK + JSON_A, forms) == [("crop_video", "json", True, (0.0, 5.0))]


def test_one_malformed_block_drops_the_turn_under_release_only() -> None:
    text = THINK + JSON_A + "\n" + BROKEN
    assert _summary(text, "release") == []
    per_call = parse_calls(text, forms="per_call").calls
    assert [c.ok for c in per_call] == [True, False] and "JSON" in (per_call[1].error or "")


def test_release_needs_strict_json_with_name_and_arguments() -> None:
    trailing_comma = JSON_A.replace("5}}", "5,}}")
    single_quotes = JSON_A.replace('"', "'")
    no_arguments = '<tool_call>{"name": "crop_video", "start_time": 0, "end_time": 5}</tool_call>'
    a_list = "<tool_call>[" + JSON_A[12:-13] + "]</tool_call>"
    for text in (trailing_comma, single_quotes, no_arguments, a_list):
        assert _summary(text, "release") == [], text
    # ours reads the first two (lenient JSON, a Python literal) as the same call
    for text in (trailing_comma, single_quotes):
        assert _summary(text, "per_call") == [("crop_video", "json", True, (0.0, 5.0))]


def test_a_trailing_unclosed_block_runs_under_release_only_when_the_turn_was_cut() -> None:
    text = THINK + JSON_A + "\n" + JSON_B.removesuffix("</tool_call>")
    cut = parse_calls(text, forms="release", at_end_of_turn=False).calls
    assert [(c.ok, c.closed) for c in cut] == [(True, True), (True, False)]
    assert cut[1].window == (5.0, 9.0)
    # ended on its end-of-turn token: the open block holds <|im_end|>, not JSON: the turn drops
    assert _summary(text, "release", at_end_of_turn=True) == []
    per_call = parse_calls(text, forms="per_call").calls
    assert [c.ok for c in per_call] == [True, False] and "unclosed" in (per_call[1].error or "")


def test_a_release_block_runs_to_its_closing_tag_across_other_tags() -> None:
    """An opening inside an open block is part of its body (the release's pattern), so both
    blocks fail as one; ours ends the first block at the next tag."""
    text = JSON_A.removesuffix("</tool_call>") + JSON_B
    assert _summary(text, "release") == []
    assert [c.ok for c in parse_calls(text, forms="per_call").calls] == [False, True]


def test_a_python_style_call_inside_tool_call_runs_under_per_call_only() -> None:
    assert _summary(THINK + PYCALL, "release") == []
    assert _summary(THINK + PYCALL, "per_call") == [("crop_video", "python", True, (2.0, 7.0))]


def test_tool_code_runs_as_the_release_fallback_and_never_per_call() -> None:
    rel = parse_calls(THINK + CODE, forms="release")
    assert _summary(THINK + CODE, "release") == [("crop_video", "tool_code", True, (3.0, 8.0))]
    assert rel.executed_tool_code and rel.n_tool_code == 1
    per_call = parse_calls(THINK + CODE, forms="per_call")
    assert per_call.calls == () and per_call.n_tool_code == 1  # counted as a reversion only


def test_the_fallback_reads_every_line_and_skips_what_is_not_a_call() -> None:
    body = (
        "crop_video(1, 4)\nlet me think\nprint(crop_video(start_time=6, end_time=9))\nprint('hi')"
    )
    text = f"<tool_code>\n{body}\n</tool_code>"
    assert _summary(text, "release") == [
        ("crop_video", "tool_code", True, (1.0, 4.0)),
        ("crop_video", "tool_code", True, (6.0, 9.0)),
    ]


def test_the_fallback_acts_only_when_the_json_blocks_give_nothing() -> None:
    assert _summary(JSON_A + CODE, "release") == [("crop_video", "json", True, (0.0, 5.0))]
    assert _summary(BROKEN + CODE, "release") == [("crop_video", "tool_code", True, (3.0, 8.0))]
    assert _summary(PYCALL + CODE, "release") == [("crop_video", "tool_code", True, (3.0, 8.0))]


def test_a_release_call_that_names_what_cannot_run_is_still_a_call() -> None:
    """The JSON reads, so the turn has a call (the episode goes on); running it fails."""
    unknown = '<tool_call>{"name": "zoom", "arguments": {"level": 2}}</tool_call>'
    assert _summary(unknown, "release") == [("zoom", "json", True, (None, None))]
    bad_args = '<tool_call>{"name": "crop_video", "arguments": "0, 5"}</tool_call>'
    (call,) = parse_calls(bad_args, forms="release").calls
    assert not call.ok and "object" in (call.error or "")
    nan = _crop("NaN", 5)
    (call,) = parse_calls(nan, forms="release").calls
    assert not call.ok and "finite" in (call.error or "") and call.window is None


def test_a_turn_without_a_call_has_none_under_both() -> None:
    text = THINK + "<answer>B</answer>"
    for forms in ("release", "per_call"):
        assert parse_calls(text, forms=forms).calls == ()  # type: ignore[arg-type]
