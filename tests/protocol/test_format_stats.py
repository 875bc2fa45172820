from paravt.protocol.stats import format_stats
from paravt.protocol.tags import render_crop_call

PRE = "<think>\n"


def test_tool_turn_then_answer_turn() -> None:
    text = (
        PRE
        + "plan the search\n</think>\n"
        + render_crop_call(0, 30)
        + render_crop_call(30, 60)
        + "<tool_response>[1] "
        "<answer>Z</answer></tool_response><think>\nok\n</think><answer>A</answer>"
    )
    s = format_stats(text)
    assert (s.think_opened, s.think_closed, s.think_unclosed, s.think_chars) == (
        True,
        True,
        False,
        15,
    )
    assert (s.think_first, s.answer_opened, s.answer_closed, s.balanced, s.flow) == (True,) * 5
    assert (s.n_tool_call, s.n_tool_call_ok, s.n_calls, s.n_tool_code) == (2, 2, 2, 0)


def test_unclosed_think_is_flagged_and_not_first() -> None:
    s = format_stats(PRE + "rambling forever")
    assert (s.think_closed, s.think_unclosed, s.think_first, s.balanced, s.flow) == (
        False,
        True,
        False,
        False,
        False,
    )


def test_think_closed_requires_the_next_tag_to_close_it() -> None:
    s = format_stats(PRE + "x<answer>A</answer></think>")
    assert not s.think_closed and not s.think_unclosed and not s.think_first and not s.flow


def test_python_call_and_unclosed_call_are_not_json_closed() -> None:
    s = format_stats(
        PRE + "look</think><tool_call>crop_video(1, 2)</tool_call>"
        '<tool_call>{"name": "crop_video", "arguments": {}}'
    )
    assert (s.n_tool_call, s.n_tool_call_ok, s.balanced) == (2, 0, False)


def test_answer_closed_needs_closing_of_the_last_answer() -> None:
    assert not format_stats("<answer>A</answer><answer>B").answer_closed
    assert format_stats("<answer>A<answer>B</answer>").answer_closed


def test_flow_rejects_answer_before_think() -> None:
    assert not format_stats("<answer>A</answer><think>x</think><answer>A</answer>").flow
    assert format_stats("<think>a</think><think>b</think><answer>A</answer>").flow


def test_tool_code_is_counted() -> None:
    s = format_stats(PRE + "x</think><tool_code>crop_video(1,2)</tool_code><tool_code>")
    assert s.tool_code and s.n_tool_code == 2 and s.n_calls == 0 and not s.balanced


def test_think_first_needs_a_tool_call() -> None:
    direct = format_stats(PRE + "plan the search\n</think>\n<answer>A</answer>")
    code = format_stats(PRE + "plan\n</think>\n<tool_code>crop_video(0, 5)</tool_code>")
    late = format_stats(PRE + "plan" + render_crop_call(0, 5) + "</think>")
    assert not direct.think_first and not code.think_first and not late.think_first


def test_answer_filled_reads_the_last_answer_body() -> None:
    assert not format_stats(PRE + "x</think><answer> \n </answer>").answer_filled
    assert not format_stats(PRE + "x</think><answer>A</answer><answer></answer>").answer_filled
    assert format_stats(PRE + "x</think><answer>B").answer_filled  # unclosed but filled
    empty = format_stats(PRE + "ok fine\n</think><answer></answer>")
    assert empty.answer_closed and not empty.flow  # closed tags, no flow for an empty answer


def test_release_flags_read_first_pairs_and_substrings() -> None:
    # release utils.py:12: an unclosed think's content stops at <tool_, <answer> or <|im_end|>
    r = format_stats(PRE + "short<|im_end|>\nmuch more text here").release
    assert (r.think_chars, r.think_closed, r.think_unclosed) == (5, False, True)
    # a think closed only after a tool call: its content runs to that </think> (utils.py:11)
    r = format_stats(PRE + "go" + render_crop_call(0, 5) + "</think>").release
    assert r.think_closed and r.think_chars > 10 and r.json_calls == 1 and r.think_before_call
    # an unclosed <tool_code> reads to the end of the text (utils.py:9): "(B)" is a call line
    s = format_stats("<tool_code>\nlook closer\n<answer>(B)</answer>")
    assert (s.release.code_calls, s.n_tool_code_ok) == (1, 0)
    # counts, not alternation (format.py:120-121); a pair's body is to the FIRST close after it
    s = format_stats("</answer><answer>A")
    assert s.release.counts_equal and not s.balanced and not s.release.answer
