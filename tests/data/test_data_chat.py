from __future__ import annotations

from pathlib import Path

from paravt.agent.inputs import to_episode_input
from paravt.data.chat import to_chat_messages
from paravt.data.schema import read_rows


def test_markers_and_decoded_frames_line_up(synth_dir: Path) -> None:
    rows = read_rows(synth_dir / "sft.parquet")
    seq = next(r for r in rows if r.mode == "sequential")
    msgs = to_chat_messages(
        seq, synth_dir, max_pixels=32 * 32, size_factor=32, crop_max_pixels=64 * 64
    )
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
    assert (inp.id, inp.task, inp.answer, inp.options, inp.nframes) == (
        e.id,
        e.task,
        e.answer,
        e.options,
        e.nframes,
    )
    assert inp.tool_necessary == e.tool_necessary_at_n[e.nframes]
    assert to_episode_input(row, synth_dir, nframes=4).tool_necessary == e.tool_necessary_at_n[4]
    # the gated n changes the necessity (with_nframes used to leave a stale copy in meta)
    for n in (4, 64):
        assert inp.with_nframes(n).tool_necessary == e.tool_necessary_at_n[n]
    assert (inp.subset, inp.duration) == (e.subset or "", e.duration)


def test_verl_rows_round_trip_to_the_same_episode_input(synth_dir: Path) -> None:
    import json

    from paravt.agent.inputs import from_extra_info
    from paravt.integrations.verl.data import verl_record

    row = read_rows(synth_dir / "rl.parquet")[0]
    ours = to_episode_input(row, synth_dir)
    extra = json.loads(
        json.dumps(verl_record(row, synth_dir, 0, "paravt_agent")["extra_info"])
    )  # as parquet
    theirs = from_extra_info(extra, ours.nframes)
    for key in (
        "id",
        "video",
        "question",
        "task",
        "answer",
        "options",
        "nframes",
        "subset",
        "duration",
        "tool_necessary_at_n",
        "tool_necessary",
    ):
        assert getattr(theirs, key) == getattr(ours, key), key
