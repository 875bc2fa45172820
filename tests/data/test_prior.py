"""The simulated tool prior's traces (paravt/data/synth/prior.py) carry the habits they
advertise."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from paravt.data.rows import RLRow
from paravt.data.schema import read_rows
from paravt.data.synth.perception import NOTHING
from paravt.data.synth.prior import (
    MAX_THINK_SENTENCES,
    Habit,
    prior_rows,
    prior_trace,
    tool_code_call,
)
from paravt.errors import DataError
from paravt.protocol.parser import parse_calls
from paravt.protocol.stats import format_stats


@pytest.fixture(scope="module")
def prompts(synth_dir: Path) -> list[RLRow]:
    return [r for r in read_rows(synth_dir / "rl.parquet") if isinstance(r, RLRow)]


def _assistant(row) -> list[str]:
    return [m.text for m in row.messages if m.role == "assistant"]


def test_python_form_traces_call_one_tool_code_per_turn(prompts: list[RLRow]) -> None:
    rows = prior_rows(prompts, tool_mix=1.0, habit=Habit(5))
    assert len(rows) == len(prompts)
    for row in rows:
        turns = _assistant(row)
        *tool_turns, final = turns
        assert 1 <= len(tool_turns) <= 2
        for t in tool_turns:
            s = format_stats(t)
            assert s.n_tool_code == 1 and s.n_tool_call == 0  # one python-call block per turn
            call = parse_calls(t, execute_tool_code=True).calls[0]
            assert call.name == "crop_video" and call.error is None
            assert call.arguments["start_time"] < call.arguments["end_time"]
        s = format_stats(final)
        assert not s.answer_opened and s.think_closed and s.n_tool_code == 0  # untagged answer
        assert final.rstrip().endswith(row.extra_info.answer)


def test_weak_prior_traces_answer_only(prompts: list[RLRow]) -> None:
    for row in prior_rows(prompts, tool_mix=0.0, habit=Habit(5)):
        turns = _assistant(row)
        assert len(turns) == 1 and not any(m.role == "tool" for m in row.messages)
        s = format_stats(turns[0])
        assert s.n_tool_code == 0 and s.n_tool_call == 0 and not s.answer_opened


def test_the_mix_sets_the_tool_code_rate_and_thinks_are_long(prompts: list[RLRow]) -> None:
    rows = prior_rows(prompts * 10, tool_mix=0.5, habit=Habit(6), seed=3)
    rate = sum(any("<tool_code>" in t for t in _assistant(r)) for r in rows) / len(rows)
    assert 0.35 < rate < 0.65
    final_thinks = [format_stats(_assistant(r)[-1]).think_chars for r in rows]
    assert min(final_thinks) > 150  # six sentences of ≥ 40 characters
    assert prior_rows(prompts, tool_mix=0.5, habit=Habit(6), seed=3) == rows[: len(prompts)]


def test_a_tool_trace_stops_at_the_window_that_holds_the_needle(prompts: list[RLRow]) -> None:
    for row in prior_rows(prompts, tool_mix=1.0, habit=Habit(1)):
        tools = [m.text for m in row.messages if m.role == "tool"]
        assert all(t.startswith("Nothing") for t in tools[:-1])
        e = row.extra_info
        args = (
            parse_calls(_assistant(row)[len(tools) - 1], execute_tool_code=True).calls[0].arguments
        )
        overlaps = e.needle_start < args["end_time"] and e.needle_end > args["start_time"]
        assert (not tools[-1].startswith("Nothing")) == overlaps


def test_call_rendering_and_bad_mix() -> None:
    assert tool_code_call(0, 37.5) == "<tool_code>crop_video(0, 37.50)</tool_code>"
    with pytest.raises(DataError, match="tool_mix"):
        prior_rows([], tool_mix=1.5, habit=Habit(1))


def test_habit_copies_add_traces_and_keep_the_first(prompts: list[RLRow]) -> None:
    one = prior_rows(prompts, tool_mix=0.5, habit=Habit(2), seed=3)
    three = prior_rows(prompts, tool_mix=0.5, habit=Habit(2), seed=3, copies=3)
    assert len(three) == 3 * len(one) and len({r.id for r in three}) == len(three)
    assert [
        r for r in three if r.id.endswith("-prior")
    ] == one  # copies=1 is the first copy of each
    texts = {r.id: _assistant(r) for r in three}
    assert any(
        texts[f"{p.id}-prior"] != texts[f"{p.id}-prior1"] for p in prompts
    )  # own draws per copy
    with pytest.raises(DataError, match="copies"):
        prior_rows(prompts, tool_mix=0.5, habit=Habit(2), copies=0)


def test_native_form_calls_every_window_in_one_turn(prompts: list[RLRow]) -> None:
    from paravt.data.synth.oracle import plan_windows

    rows = prior_rows(prompts, tool_mix=1.0, habit=Habit(2, json_share=1.0))
    for row in rows:
        call_turn, final = _assistant(row)
        s = format_stats(call_turn)
        windows = plan_windows(row.extra_info.duration)
        assert s.n_tool_code == 0 and s.n_tool_call_ok == len(windows) >= 2  # all in ONE turn
        calls = parse_calls(call_turn).calls
        assert [(c.arguments["start_time"], c.arguments["end_time"]) for c in calls] == [
            (w.start, w.end) for w in windows
        ]
        (tool,) = [m.text for m in row.messages if m.role == "tool"]
        assert tool.count("\n") == len(windows) - 1 and tool.startswith("[1]")  # one line each
        assert row.mode == "parallel" and not format_stats(final).answer_opened


def test_json_share_mixes_the_two_tool_forms(prompts: list[RLRow]) -> None:
    rows = prior_rows(prompts * 10, tool_mix=1.0, habit=Habit(1, json_share=0.8), seed=5)
    native = sum(r.mode == "parallel" for r in rows) / len(rows)
    assert 0.7 < native < 0.9 and {r.mode for r in rows} == {"parallel", "sequential"}


def test_the_think_tail_is_geometric_and_capped() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    short = Habit(2)
    assert {short.sentences(rng) for _ in range(50)} == {2}  # no tail: every think as long
    tail = Habit(2, think_tail=4.0)
    draws = [tail.sentences(rng) for _ in range(4000)]
    assert min(draws) == 2 and max(draws) <= MAX_THINK_SENTENCES
    assert 5.6 < sum(draws) / len(draws) < 6.4  # 2 + a geometric of mean 4
    long = sum(d >= 12 for d in draws) / len(draws)  # P(extra ≥ 10) = 0.8^10 ≈ 0.107
    assert 0.08 < long < 0.14


def test_runaway_thinks_run_past_the_budget_in_their_share() -> None:
    import numpy as np

    from paravt.data.synth.prior import RUNAWAY_SENTENCES

    rng = np.random.default_rng(3)
    habit = Habit(2, think_tail=4.0, runaway=0.25)
    draws = [habit.sentences(rng) for _ in range(4000)]
    runaway = [d for d in draws if d > MAX_THINK_SENTENCES]
    assert 0.22 < len(runaway) / len(draws) < 0.28
    assert min(runaway) >= RUNAWAY_SENTENCES[0] and max(runaway) <= RUNAWAY_SENTENCES[1]
    short = [d for d in draws if d <= MAX_THINK_SENTENCES]
    assert 5.6 < sum(short) / len(short) < 6.4  # the rest: 2 + a geometric of mean 4, as before


def test_no_runaway_share_keeps_the_traces_as_they_were(prompts: list[RLRow]) -> None:
    # a zero share draws nothing: the same seed gives the same traces with or without the field
    old = prior_rows(prompts, tool_mix=1.0, habit=Habit(2, think_tail=3.0, json_share=0.5), seed=1)
    new = prior_rows(
        prompts, tool_mix=1.0, habit=Habit(2, think_tail=3.0, json_share=0.5, runaway=0.0), seed=1
    )
    assert old == new
    ran = prior_rows(
        prompts, tool_mix=1.0, habit=Habit(2, think_tail=3.0, json_share=0.5, runaway=1.0), seed=1
    )
    thinks = [
        m.content.split("</think>")[0] for r in ran for m in r.messages if m.role == "assistant"
    ]
    assert all(t.count(".") >= 115 for t in thinks)  # every think a runaway


def test_python_share_writes_python_calls_the_release_reader_does_not_run(
    prompts: list[RLRow],
) -> None:
    from paravt.protocol.parser import parse_calls

    habit = Habit(1, json_share=1.0, python_share=0.5)
    rows = prior_rows(prompts * 20, tool_mix=1.0, habit=habit, seed=2)
    assert {r.mode for r in rows} == {"parallel"}  # every tool trace in the native tag
    call_turns = [r.messages[-3].content for r in rows]  # think + calls, then tool, then answer
    python = [t for t in call_turns if 'crop_video("video.mp4", ' in t]
    assert 0.35 < len(python) / len(call_turns) < 0.65
    for turn in call_turns:
        release = parse_calls(turn, forms="release").calls
        per_call = parse_calls(turn, forms="per_call").calls
        assert len(per_call) >= 2 and all(c.ok for c in per_call)  # the windows of the plan
        if turn in python:
            assert release == () and {c.source for c in per_call} == {"python"}
        else:
            assert len(release) == len(per_call) and {c.source for c in release} == {"json"}


def test_no_python_share_keeps_the_native_traces_as_they_were(prompts: list[RLRow]) -> None:
    kw = {"tool_mix": 1.0, "seed": 4}
    old = prior_rows(prompts, habit=Habit(2, think_tail=3.0, json_share=0.7), **kw)
    new = prior_rows(
        prompts, habit=Habit(2, think_tail=3.0, json_share=0.7, python_share=0.0), **kw
    )
    assert old == new


def test_the_habit_of_a_prior_config_takes_each_of_its_fields() -> None:
    from paravt.config import PriorConfig

    p = PriorConfig(
        think_sentences=3, think_tail=2.5, json_share=0.4, max_calls=3, think_runaway=0.1
    )
    p = p.model_copy(update={"python_share": 0.6, "plain_share": 0.2})
    assert Habit.of(p) == Habit(
        3,
        think_tail=2.5,
        json_share=0.4,
        max_calls=3,
        runaway=0.1,
        python_share=0.6,
        plain_share=0.2,
    )


def test_plain_share_answers_under_the_no_tool_prompt_without_a_call(
    prompts: list[RLRow],
) -> None:
    """A plain trace swaps the prompt's tool system prompt for the reasoning one and calls
    nothing (a pretrained model does not call a tool it is not offered); the others keep the
    tool prompt and, at tool_mix 1, call; a zero share draws nothing."""
    from paravt.protocol.prompts import system_prompt

    kw = {"tool_mix": 1.0, "seed": 3}
    habit = Habit(2, json_share=0.5)
    by_hand = []  # the traces of before the field: the tool draw, then the trace, nothing between
    for i, row in enumerate(prompts):
        rng = np.random.default_rng([3, i])
        by_hand.append(prior_trace(row, rng, tool=bool(rng.random() < 1.0), habit=habit))
    assert prior_rows(prompts, habit=Habit(2, json_share=0.5, plain_share=0.0), **kw) == by_hand
    rows = prior_rows(prompts * 20, habit=Habit(2, json_share=0.5, plain_share=0.4), **kw)
    plain = [r for r in rows if r.messages[0].text == system_prompt("none")]
    assert 0.3 < len(plain) / len(rows) < 0.5
    by_id = {p.id: p for p in prompts}
    for r in rows:
        prompt = by_id[r.id.removesuffix("-prior")]
        assert r.messages[1] == prompt.messages[1]  # the user's message as it was
        calls = sum(t.count("<tool_call>") + t.count("<tool_code>") for t in _assistant(r))
        if r in plain:
            assert r.mode == "none" and calls == 0 and len(_assistant(r)) == 1
            assert _assistant(r)[0].endswith("</think>\n" + prompt.extra_info.answer)
        else:
            assert r.messages[0] == prompt.messages[0] and r.mode != "none" and calls >= 1


def test_a_tool_result_names_what_its_window_shows(prompts: list[RLRow]) -> None:
    """The base's tool world is informative: a hit window's result names the needle in the
    perception's words; a row without a description keeps the older sentence (no colour)."""
    for row in prior_rows(prompts, tool_mix=1.0, habit=Habit(1, json_share=1.0)):
        e = row.extra_info
        assert e.needle_description and e.needle_kind
        (tool,) = [m.text for m in row.messages if m.role == "tool"]
        hits = [line for line in tool.split("\n") if NOTHING not in line]
        said = e.needle_description[0].upper() + e.needle_description[1:] + " appears "
        assert hits and all(said in line for line in hits), tool
    bare = [replace(p, extra_info=replace(p.extra_info, needle_description=None)) for p in prompts]
    for row in prior_rows(bare, tool_mix=1.0, habit=Habit(1, json_share=1.0)):
        (tool,) = [m.text for m in row.messages if m.role == "tool"]
        assert f"A brief {row.extra_info.needle_kind} event appears from" in tool
