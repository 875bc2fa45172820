"""The SFT main-trace mix (issue 38 item 7, ``paravt.data.synth.sft_mix``): tool traces are
imitation data under the tool prompt, not conditioned on whether the overview suffices."""

from __future__ import annotations

import pytest

from paravt.data.rows import ExtraInfo, Message, SFTRow
from paravt.data.synth.build import _question_rows, _specs
from paravt.data.synth.sft_mix import mix_counts
from paravt.errors import DataError


def _rows(videos: int, tool_share: float, seed: int = 0) -> tuple[list, dict]:
    """The build's rows of ``videos`` flash videos of 60–150 s (the repro presets'), without
    writing a video."""
    specs = _specs(seed, (videos, 1, 1), (60, 150), (64, 64), ("flash",))
    rel = {s.name: f"videos/x/{s.name}.mp4" for group in specs for s in group}
    sft, prompts, _, _, mix = _question_rows(specs, rel, seed, 2, tool_share)
    return sft, {**mix, "prompts": len(prompts)}


def test_the_tool_share_is_as_asked_and_tool_traces_occur_where_the_overview_suffices() -> None:
    sft, mix = _rows(60, 0.3)
    main = [r for r in sft if r.kind == "main"]
    tool = [r for r in main if r.mode in ("parallel", "sequential")]
    share = len(tool) / len(main)
    assert abs(share - 0.3) <= 2 / len(main) and mix["measured_tool_share"] == round(share, 4)
    # one parallel-or-direct trace per prompt; sequential ones only beside a parallel trace
    assert sum(r.mode in ("parallel", "none") for r in main) == mix["prompts"] == 180
    par_ids = {r.extra_info.id for r in main if r.mode == "parallel"}
    assert {r.extra_info.id for r in main if r.mode == "sequential"} <= par_ids
    # the paper's imitation data: tool traces at budgets whose overview already shows the needle
    suffices = [r for r in main if r.mode == "parallel" and not r.extra_info.tool_necessary]
    assert len(suffices) == mix["tool_where_overview_suffices"] >= 10
    assert {r.extra_info.nframes for r in suffices} >= {32, 64}
    for r in suffices:
        assert "<tool_call>" in r.messages[2].text and r.messages[3].role == "tool"
    # direct traces answer from an overview that shows the needle, under the reasoning prompt
    for r in main:
        if r.mode == "none":
            assert r.extra_info.tool_necessary is False and "<tool_call>" not in r.messages[2].text


@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
def test_the_share_follows_the_parameter(share: float) -> None:
    _, mix = _rows(30, share)
    assert abs(mix["measured_tool_share"] - share) <= 2 / mix["main"]
    if share == 1.0:
        assert mix["direct"] == 0
    if share == 0.0:  # every prompt here has a budget whose overview shows the needle
        assert mix["parallel_tool"] == mix["sequential"] == 0


def test_the_mix_is_deterministic_for_a_seed_and_changes_with_it() -> None:
    a, _ = _rows(20, 0.3)
    b, _ = _rows(20, 0.3)
    c, _ = _rows(20, 0.3, seed=1)
    assert a == b and [r.id for r in a] != [r.id for r in c]


def test_a_share_outside_0_1_is_refused() -> None:
    with pytest.raises(DataError, match="tool_share"):
        _rows(2, 1.5)


def _row(rid: str, kind: str, mode: str, n: int, necessary: bool) -> SFTRow:
    extra = ExtraInfo(
        rid, "mcq", "Q?", "A", 60.0, nframes=n, tool_necessary_at_n={4: True, 64: necessary}
    )
    msg = (Message("user", "q"),)
    return SFTRow(rid, kind, mode, msg, ("v.mp4",), extra)  # type: ignore[arg-type]


def test_mix_counts_on_hand_made_rows() -> None:
    rows = [
        _row("a", "main", "parallel", 64, False),  # a tool trace where the overview suffices
        _row("b", "main", "parallel", 4, True),
        _row("c", "main", "sequential", 4, True),
        _row("d", "main", "none", 64, False),
        _row("e", "main", "none", 64, False),
        _row("f", "main", "none", 64, False),
        _row("g", "main", "none", 64, False),
        _row("h", "main", "none", 64, False),
        _row("i", "main", "none", 64, False),
        _row("j", "main", "none", 64, False),
        _row("s", "sub", "sub", 4, True),  # sub-agent rows are not main traces
    ]
    assert mix_counts(rows, 0.3) == {
        "tool_share": 0.3,
        "main": 10,
        "parallel_tool": 2,
        "sequential": 1,
        "direct": 7,
        "measured_tool_share": 0.3,
        "tool_where_overview_suffices": 1,
    }
