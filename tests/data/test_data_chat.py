from __future__ import annotations

from pathlib import Path

from paravt.data.chat import to_chat_messages, to_episode_input
from paravt.data.schema import read_rows


def test_markers_and_decoded_frames_line_up(synth_dir: Path) -> None:
    rows = read_rows(synth_dir / "sft.parquet")
    seq = next(r for r in rows if r.mode == "sequential")
    msgs = to_chat_messages(seq, synth_dir, max_pixels=32 * 32, size_factor=32, crop_max_pixels=64 * 64)
    assert [m.role for m in msgs] == [m.role for m in seq.messages]
    for m, src in zip(msgs, seq.messages):
        assert m.content.count("<video>") == len(m.videos)
        assert m.content == src.text
    overview = msgs[1].videos[0]
    assert len(overview) == seq.extra_info.nframes and (overview.height, overview.width) == (32, 32)
    crop = msgs[3].videos[0]
    assert len(crop) == seq.messages[3].content[1].nframes and (crop.height, crop.width) == (64, 64)
    assert msgs[2].content.startswith("<think>\n")


def test_episode_input_carries_ground_truth_and_tool_necessity(synth_dir: Path) -> None:
    row = read_rows(synth_dir / "rl.parquet")[0]
    inp = to_episode_input(row, synth_dir)
    e = row.extra_info
    assert Path(inp.video).is_absolute() and Path(inp.video).exists()
    assert (inp.id, inp.task, inp.answer, inp.options, inp.nframes) == (e.id, e.task, e.answer, e.options, e.nframes)
    assert inp.meta["tool_necessary"] == e.tool_necessary_at_n[e.nframes]
    assert to_episode_input(row, synth_dir, nframes=4).meta["tool_necessary"] == e.tool_necessary_at_n[4]
