"""The simulated tool prior's traces (paravt/data/synth/prior.py) carry the habits they
advertise."""

from __future__ import annotations

from pathlib import Path

import pytest

from paravt.data.schema import RLRow, read_rows
from paravt.data.synth.prior import prior_rows, tool_code_call
from paravt.errors import DataError
from paravt.protocol.parser import parse_calls
from paravt.protocol.stats import format_stats


@pytest.fixture(scope="module")
def prompts(synth_dir: Path) -> list[RLRow]:
    return [r for r in read_rows(synth_dir / "rl.parquet") if isinstance(r, RLRow)]


def _assistant(row) -> list[str]:
    return [m.text for m in row.messages if m.role == "assistant"]


def test_strong_prior_traces_call_tools_in_the_pretraining_style(prompts: list[RLRow]) -> None:
    rows = prior_rows(prompts, tool_mix=1.0, think_sentences=5)
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
    for row in prior_rows(prompts, tool_mix=0.0, think_sentences=5):
        turns = _assistant(row)
        assert len(turns) == 1 and not any(m.role == "tool" for m in row.messages)
        s = format_stats(turns[0])
        assert s.n_tool_code == 0 and s.n_tool_call == 0 and not s.answer_opened


def test_the_mix_sets_the_tool_code_rate_and_thinks_are_long(prompts: list[RLRow]) -> None:
    rows = prior_rows(prompts * 10, tool_mix=0.5, think_sentences=6, seed=3)
    rate = sum(any("<tool_code>" in t for t in _assistant(r)) for r in rows) / len(rows)
    assert 0.35 < rate < 0.65
    final_thinks = [format_stats(_assistant(r)[-1]).think_chars for r in rows]
    assert min(final_thinks) > 150  # six sentences of ≥ 40 characters
    assert prior_rows(prompts, tool_mix=0.5, think_sentences=6, seed=3) == rows[: len(prompts)]


def test_a_tool_trace_stops_at_the_window_that_holds_the_needle(prompts: list[RLRow]) -> None:
    for row in prior_rows(prompts, tool_mix=1.0, think_sentences=1):
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
        prior_rows([], tool_mix=1.5, think_sentences=1)


def test_habit_copies_add_traces_and_keep_the_first(prompts: list[RLRow]) -> None:
    one = prior_rows(prompts, tool_mix=0.5, think_sentences=2, seed=3)
    three = prior_rows(prompts, tool_mix=0.5, think_sentences=2, seed=3, copies=3)
    assert len(three) == 3 * len(one) and len({r.id for r in three}) == len(three)
    assert [
        r for r in three if r.id.endswith("-prior")
    ] == one  # copies=1 is the first copy of each
    texts = {r.id: _assistant(r) for r in three}
    assert any(
        texts[f"{p.id}-prior"] != texts[f"{p.id}-prior1"] for p in prompts
    )  # own draws per copy
    with pytest.raises(DataError, match="copies"):
        prior_rows(prompts, tool_mix=0.5, think_sentences=2, copies=0)
