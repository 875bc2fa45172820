from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from paravt.data.schema import read_rows
from paravt.data.synth.build import build
from paravt.video import sample_frames


def test_same_seed_gives_identical_rows_and_frames(tmp_path: Path, synth_dir: Path) -> None:
    again = tmp_path / "again"
    build(again, videos=10, eval_videos=3, seed=7, max_duration=160, workers=1)
    for name in ("sft.parquet", "rl.parquet", "eval.parquet"):
        assert pq.read_table(synth_dir / name).equals(pq.read_table(again / name)), name
    a = sample_frames(synth_dir / "videos/train/v0003.mp4", 0.0, 30.0, nframes=6)
    b = sample_frames(again / "videos/train/v0003.mp4", 0.0, 30.0, nframes=6)
    assert (a.array == b.array).all()


def test_other_seed_gives_other_rows(tmp_path: Path, synth_dir: Path) -> None:
    build(tmp_path / "s8", videos=3, eval_videos=0, seed=8, max_duration=160)
    a = [r.extra_info.answer for r in read_rows(synth_dir / "rl.parquet")[:9]]
    b = [r.extra_info.answer for r in read_rows(tmp_path / "s8" / "rl.parquet")]
    assert a != b


def test_eval_uses_disjoint_videos_and_64_frame_overviews(synth_dir: Path) -> None:
    train = {v for r in read_rows(synth_dir / "rl.parquet") for v in r.videos}
    ev = read_rows(synth_dir / "eval.parquet")
    assert {v for r in ev for v in r.videos}.isdisjoint(train)
    assert len(ev) == 9 and all(
        r.extra_info.split == "eval" and r.extra_info.nframes == 64 for r in ev
    )


def test_rl_rows_cover_three_tasks_per_video(synth_dir: Path) -> None:
    rl = read_rows(synth_dir / "rl.parquet")
    assert len(rl) == 30
    assert sorted(r.extra_info.task for r in rl) == ["mcq"] * 10 + ["oe"] * 10 + ["tvg"] * 10
    for r in rl:
        e = r.extra_info
        assert e.tool_necessary_at_n is not None and set(e.tool_necessary_at_n) == {
            4,
            8,
            16,
            32,
            64,
        }
        if e.task == "tvg":
            assert e.answer == f"[{int(e.needle_start)}, {int(e.needle_end)}]"
        if e.task == "mcq":
            assert e.answer in "ABCD" and len(e.options) == 4


def test_manifest_reports_that_small_overviews_miss_the_needle_more(synth_manifest) -> None:
    share = {
        n: v["tool_necessary_share"] for n, v in synth_manifest.needle["train_prompts"].items()
    }
    assert share["4"] > share["64"]
    assert share["4"] >= share["16"] >= share["64"]
    assert synth_manifest.counts["rl"] == 30


def test_needle_kinds_limits_the_needles_drawn_and_unknown_kinds_are_refused(
    tmp_path: Path,
) -> None:
    """`paravt repro` builds a flash-only ParaVT-Synth (docs/repro.md: the kind a tiny vision tower
    learns in minutes); every row's needle is then a flash, and its questions ask for a colour."""
    import json

    import pytest

    from paravt.errors import DataError

    build(
        tmp_path / "f",
        videos=4,
        eval_videos=2,
        seed=3,
        max_duration=120,
        workers=1,
        needle_kinds=("flash",),
    )
    rows = read_rows(tmp_path / "f" / "rl.parquet") + read_rows(tmp_path / "f" / "eval.parquet")
    assert {r.extra_info.needle_kind for r in rows} == {"flash"}
    colours = {
        "red",
        "green",
        "blue",
        "yellow",
        "cyan",
        "magenta",
        "orange",
    }  # a flash's open question: its colour
    assert all(r.extra_info.answer in colours for r in rows if r.extra_info.task == "oe")
    manifest = json.loads((tmp_path / "f" / "manifest.json").read_text())
    assert manifest["params"]["needle_kinds"] == ["flash"] and set(
        manifest["counts"]["needle_kinds"]
    ) == {"flash"}
    for bad in ((), ("flash", "sparkle")):
        with pytest.raises(DataError, match="needle_kinds"):
            build(tmp_path / "bad", videos=1, eval_videos=0, needle_kinds=bad)


def test_a_prompt_whose_overview_shows_the_needle_gets_a_tool_trace_at_a_small_n(
    synth_dir: Path,
) -> None:
    """SFT_EXTRA_NS: the extra parallel traces call tools, at a small n whose overview misses the
    needle, for prompts whose own trace answered from the overview; each has its sub-agent rows."""
    from paravt.data.schema import read_rows
    from paravt.data.synth.build import SFT_EXTRA_NS

    rows = read_rows(synth_dir / "sft.parquet")
    ids = {r.id for r in rows}
    extra = [
        r for r in rows if r.kind == "main" and r.mode == "parallel" and not r.id.endswith("-par")
    ]
    assert extra, "no extra tool trace in the fixture's SFT data"
    for r in extra:
        n = int(r.id.rsplit("-par", 1)[1])
        assert (
            n in SFT_EXTRA_NS and r.extra_info.nframes == n and r.extra_info.tool_necessary_at_n[n]
        )
        assert "<tool_call>" in r.messages[2].text and r.messages[3].role == "tool"
        own = f"{r.extra_info.id}-par"
        assert (
            own in ids
            and "<tool_call>" not in next(x for x in rows if x.id == own).messages[2].text
        )
        assert any(i.startswith(f"{r.extra_info.id}-n{n}sub") for i in ids)
