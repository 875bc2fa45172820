"""Issue 41 item 4: no string makes a parser entry point raise, print or run long. Deep nesting
(``crop_video([[[…]]], 5)`` 990 deep used to raise RecursionError out of ``parse_calls``), huge
blocks and text on which ``ast`` warns, through every entry point that reads model text and
through the real ``paravt score``."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from paravt.protocol import literals, tags as T
from paravt.protocol.answer import extract_answer, is_degenerate
from paravt.protocol.parser import parse_calls
from paravt.protocol.stats import format_stats
from paravt.protocol.validate import validate_calls
from paravt.rewards import RewardWeights, compute_reward
from paravt.rewards.accuracy import mcq_letter, parse_interval, token_f1

PAIRS = ["()", "[]", "{}"]
TASKS = [("mcq", "B", ["a", "b", "c", "d"]), ("tvg", "[3, 8]", None), ("oe", "red cat", None)]
WEIGHTS = RewardWeights.default()


def nested(depth: int, pair: str, inner: str = "1") -> str:
    return pair[0] * depth + inner + pair[1] * depth


def every_entry_point(text: str) -> None:
    """Run every reader of model text on ``text``; each returns, none raises."""
    for execute in (False, True):
        res = parse_calls(text, execute_tool_code=execute, positional={"crop_video": ("a", "b")})
        assert len(res.calls) == res.n_tool_call + (res.n_tool_code if execute else 0)
        for c in res.calls:
            assert c.error is not None or (c.closed and c.name is not None)
        validate_calls(
            res.calls, duration=30.0, k_max=3, min_window=1.0, known_tools={"crop_video"}
        )
    stats = format_stats(text)
    assert stats.n_calls == len(parse_calls(T.strip_observations(text)).calls)
    answer = extract_answer(text)
    assert isinstance(is_degenerate(text), bool)
    mcq_letter(answer, ["a", "b", "c", "d"])
    parse_interval(answer)
    token_f1(answer, "red cat")
    for task, gold, options in TASKS:
        r = compute_reward(text, task=task, answer=gold, options=options, weights=WEIGHTS)
        assert math.isfinite(r.reward)


@pytest.mark.parametrize("depth", [100, 990, 5000, 100_000])
@pytest.mark.parametrize("pair", PAIRS)
def test_the_issue_deep_call_is_an_error_of_that_call(depth: int, pair: str) -> None:
    text = f"<think>x</think><tool_call>crop_video({nested(depth, pair)}, 5)</tool_call>"
    res = parse_calls(text)
    assert len(res.calls) == 1 and res.calls[0].name is None
    bound = "more than the 65536" if len(text) > 65536 else "nested more than 64 deep"
    assert bound in (res.calls[0].error or "")
    every_entry_point(text)
    as_json = f'<tool_call>{{"name": "crop_video", "arguments": {nested(depth, pair)}}}</tool_call>'
    assert bound in (parse_calls(as_json).calls[0].error or "")
    every_entry_point(as_json)


def test_nesting_up_to_the_bound_still_parses() -> None:
    inner = nested(literals.MAX_DEPTH - 2, "[]", "7")  # the call's own "(" and the JSON's "{"
    call = parse_calls(f"<tool_call>crop_video(1, 5, {inner})</tool_call>").calls[0]
    assert call.error is not None and "positional" in call.error  # read, then too many arguments
    ok = parse_calls(f"<tool_call>my_tool({inner})</tool_call>").calls[0]
    assert ok.error is None and ok.arguments == {"args": [json.loads(inner)]}


def test_escaped_brackets_inside_an_arguments_string_are_bounded_too() -> None:
    deep = "\\u005b" * 5000  # "[" 5000 times once the JSON string is decoded
    text = f'<tool_call>{{"name": "crop_video", "arguments": "{deep}"}}</tool_call>'
    call = parse_calls(text).calls[0]
    assert call.name == "crop_video" and "nested more than 64 deep" in (call.error or "")


def test_a_huge_block_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    monkeypatch.setattr(literals.json, "loads", lambda s, **kw: reads.append(s))
    monkeypatch.setattr(literals.ast, "parse", lambda s, **kw: reads.append(s))
    body = "crop_video(" + "1," * literals.MAX_BLOCK_CHARS + "5)"
    for text in (body, '{"name": "crop_video", "arguments": [' + "1," * 40_000 + "1]}"):
        call = parse_calls(f"<tool_call>{text}</tool_call>").calls[0]
        assert "characters, more than the 65536" in (call.error or "")
    assert reads == []  # neither JSON nor ast saw a byte of them


def test_ast_warnings_are_captured_never_shown() -> None:
    texts = [
        "<tool_call>crop_video(10in, 20)</tool_call>",  # SyntaxWarning: invalid decimal literal
        "<tool_call>crop_video('\\d', 20)</tool_call>",  # invalid escape sequence
        "<tool_call>crop_video(1 is 1, 20)</tool_call>",  # "is" with a literal
        "<tool_call>crop_video((1, 2)(3), 4)</tool_call>",  # 'tuple' object is not callable
    ]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for text in texts:
            every_entry_point(text)
    assert [str(w.message) for w in seen] == []
    # and the process's own filters are as they were
    with warnings.catch_warnings(record=True) as after:
        warnings.simplefilter("always")
        warnings.warn("still shown", UserWarning, stacklevel=1)
    assert len(after) == 1


HOSTILE = [
    "<tool_call>",
    "</tool_call>",
    "<tool_code>",
    "<answer>",
    "<tool_response>",
    T.IM_START,
    "crop_video(",
    '{"name": "crop_video", "arguments": ',
    "print(",
    "1:20",
    "-",
    "1e999",
    "9" * 5000,
    "'",
    ",",
    "10in",
    "\\u005b",
    "lambda:",
    "not ",
    ".b",
    "[0]",
    "1+",
    "```",
]


@st.composite
def hostile_texts(draw: st.DrawFn) -> str:
    """Fragments with deep nests and long repeats spliced in: depths around and far past the
    bound, repeats around and past the size bound (up to ~70 KB each)."""
    parts: list[str] = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["frag", "nest", "repeat", "text"]))
        if kind == "frag":
            parts.append(draw(st.sampled_from(HOSTILE)))
        elif kind == "nest":
            depth = draw(st.sampled_from([1, 63, 64, 65, 500, 990, 3000, 20_000]))
            parts.append(
                nested(depth, draw(st.sampled_from(PAIRS)), draw(st.sampled_from(HOSTILE)))
            )
        elif kind == "repeat":
            frag = draw(st.sampled_from(HOSTILE))
            chars = draw(st.sampled_from([10, 1000, 70_000]))
            parts.append(frag * max(1, chars // len(frag)))
        else:
            parts.append(draw(st.text(max_size=20)))
    return "".join(parts)


@pytest.mark.timeout(300)
@settings(max_examples=60, deadline=None)
@given(hostile_texts())
def test_no_hostile_text_makes_any_entry_point_raise(text: str) -> None:
    every_entry_point(text)


@pytest.mark.timeout(120)
def test_paravt_score_scores_the_issue_inputs(tmp_path: Path) -> None:
    deep = f"<tool_call>crop_video({nested(990, '[]')}, 5)</tool_call><answer>B</answer>"
    lines = [
        {"completion": deep, "task": "mcq", "answer": "B", "options": ["a", "b"]},
        {"completion": "<tool_call>crop_video(10in, 20)</tool_call>", "task": "oe", "answer": "x"},
        {
            "completion": "<tool_call>" + "1," * 100_000 + "</tool_call>",
            "task": "tvg",
            "answer": "[1, 2]",
        },
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    proc = subprocess.run(
        [sys.executable, "-W", "default", "-m", "paravt", "score", "--in", str(src)],
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    out = [json.loads(ln) for ln in proc.stdout.splitlines()]
    assert len(out) == 3 and all("error" not in o and o["n_calls"] == 1 for o in out)
    assert out[0]["answer"] == "B"


def test_a_clock_with_thousands_of_digits_is_not_a_time_not_a_crash() -> None:
    """Found by the property test above: ``int()`` refuses over 4,300 digits with a ValueError,
    which escaped `parse_time` (and `parse_interval`, hence the reward) as a crash."""
    from paravt.errors import ToolCallError
    from paravt.protocol.times import parse_time

    huge = "9" * 5001 + ":20"
    with pytest.raises(ToolCallError, match="is not a time"):
        parse_time(huge)
    assert parse_interval(f"[0]</tool_call>{huge}") is None
    every_entry_point(f"<tool_call>crop_video('{huge}', 5)</tool_call><answer>{huge}</answer>")
