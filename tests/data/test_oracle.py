from __future__ import annotations

from collections import Counter
from pathlib import Path

from paravt.data.check import check_rows
from paravt.data.schema import read_rows
from paravt.data.synth import oracle
from paravt.protocol import tags as T
from paravt.protocol.parser import parse_calls
from paravt.protocol.validate import validate_calls
from paravt.video import draw, sample_frames


def test_windows_cover_the_video_with_at_most_8_windows_of_40_s() -> None:
    for d in (60, 61, 119, 160, 241, 300):
        ws = oracle.plan_windows(d)
        assert ws[0].start == 0 and ws[-1].end == d
        assert all(a.end == b.start for a, b in zip(ws, ws[1:]))
        assert 2 <= len(ws) <= 8 and all(w.end - w.start <= 40 for w in ws)
    assert [(w.start, w.end) for w in oracle.plan_windows(100)] == [(0, 33), (33, 67), (67, 100)]


def test_oracle_traces_parse_validate_and_pass_check(synth_dir: Path) -> None:
    rows = read_rows(synth_dir / "sft.parquet")
    report = check_rows(rows)
    assert report.ok, report.violations[:5]
    n_calls = 0
    for r in rows:
        for m in r.messages:
            if m.role != "assistant" or r.kind != "main":
                continue
            assert m.text.startswith(T.THINK_PREFIX)
            calls = validate_calls(
                parse_calls(m.text).calls,
                duration=r.extra_info.duration,
                k_max=8,
                min_window=1.0,
                known_tools={"crop_video"},
            )
            assert all(c.error is None for c in calls)
            n_calls += len(calls)
    assert n_calls > 0
    modes = {r.mode for r in rows}
    assert modes == {"parallel", "sequential", "none", "sub"}


def test_tool_prompt_traces_always_call_and_reasoning_traces_never(synth_dir: Path) -> None:
    """Issue 38 item 7: under the tool (parallel) prompt the oracle calls tools whatever the
    overview shows; under the reasoning (none) prompt it answers from an overview that shows the
    needle, never calling."""
    from paravt.protocol import prompts

    seen = {"parallel": 0, "none": 0}
    for r in read_rows(synth_dir / "sft.parquet"):
        if r.kind != "main" or r.mode not in seen:
            continue
        seen[r.mode] += 1
        called = any(T.TOOL_CALL_OPEN in m.text for m in r.messages if m.role == "assistant")
        assert called == (r.mode == "parallel"), r.id
        assert r.messages[0].text == prompts.system_prompt(r.mode, (prompts.CROP_VIDEO_SPEC,))
        if r.mode == "none":
            assert r.extra_info.tool_necessary is False
        assert r.messages[-1].text.endswith(f"<answer>{r.extra_info.answer}</answer>")
    assert seen["parallel"] and seen["none"]


def test_the_window_reported_as_holding_the_needle_shows_it_when_decoded(synth_dir: Path) -> None:
    checked = 0
    for r in read_rows(synth_dir / "sft.parquet"):
        if (
            r.kind != "sub"
            or r.extra_info.needle_kind != "flash"
            or r.messages[-1].text == oracle.NOTHING
        ):
            continue
        part = r.messages[-2].content[0]  # the user turn: the window first
        frames = sample_frames(
            synth_dir / part.video, part.video_start, part.video_end, fps=1.0, max_frames=16
        )
        assert len(frames) == part.nframes
        colour = r.extra_info.answer if r.extra_info.task == "oe" else None
        means = [f.reshape(-1, 3).mean(0) for f in frames.array]
        names = {
            draw.nearest_color(m) for m in means if m.max() > 150
        }  # muted backgrounds stay ≤ 120
        assert names, r.id
        if colour:
            assert colour.split()[0] in names
        checked += 1
    assert checked > 0


def test_the_final_turn_after_a_tool_response_reads_the_evidence_not_a_copy_of_it(
    synth_dir: Path,
) -> None:
    """After a tool response the oracle thinks only what is asked, then answers: the answer is
    read from the context (an open question's answer is in the parallel summaries), never first
    copied into the think. A direct answer's think still says what the overview shows."""
    rows = [r for r in read_rows(synth_dir / "sft.parquet") if r.kind == "main"]
    for r in rows:
        final = r.messages[-1].text
        think = final.split(T.THINK_CLOSE)[0].removeprefix(T.THINK_PREFIX).strip()
        e = r.extra_info
        if r.mode in ("parallel", "sequential"):
            event = e.task == "oe" and e.needle_kind != "flash"  # a digit or shape: the label
            assert think == ("The question asks for the event." if event else oracle.ASKS[e.task])
            assert final.endswith(f"{T.ANSWER_OPEN}{e.answer}{T.ANSWER_CLOSE}")
        if r.mode == "parallel" and e.task == "oe":
            (tool,) = [m.text for m in r.messages if m.role == "tool"]
            assert e.answer in tool  # what the answer is read from
        if r.mode == "none":
            assert "The overview shows" in think
    modes = Counter(r.mode for r in rows)
    assert modes["parallel"] > 0 and modes["none"] > 0
