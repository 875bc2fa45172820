from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from paravt.data.schema import read_rows
from paravt.data.synth.build import SceneSpec, build
from paravt.video import sample_frames


def test_same_seed_gives_identical_rows_and_frames(tmp_path: Path, synth_dir: Path) -> None:
    again = tmp_path / "again"
    build(again, videos=10, eval_videos=3, seed=7, workers=1, scenes=SceneSpec(max_duration=160))
    for name in ("sft.parquet", "rl.parquet", "eval.parquet"):
        assert pq.read_table(synth_dir / name).equals(pq.read_table(again / name)), name
    a = sample_frames(synth_dir / "videos/train/v0003.mp4", 0.0, 30.0, nframes=6)
    b = sample_frames(again / "videos/train/v0003.mp4", 0.0, 30.0, nframes=6)
    assert (a.array == b.array).all()


def test_other_seed_gives_other_rows(tmp_path: Path, synth_dir: Path) -> None:
    build(tmp_path / "s8", videos=3, eval_videos=0, seed=8, scenes=SceneSpec(max_duration=160))
    a = [r.extra_info.answer for r in read_rows(synth_dir / "rl.parquet")[:9]]
    b = [r.extra_info.answer for r in read_rows(tmp_path / "s8" / "rl.parquet")]
    assert a != b


def test_eval_uses_disjoint_videos_and_64_frame_overviews(synth_dir: Path) -> None:
    train = {v for r in read_rows(synth_dir / "rl.parquet") for v in r.videos}
    train |= {v for r in read_rows(synth_dir / "sft.parquet") for v in r.videos}
    ev = read_rows(synth_dir / "eval.parquet")
    assert {v for r in ev for v in r.videos}.isdisjoint(train)
    assert len(ev) == 9 and all(
        r.extra_info.split == "eval" and r.extra_info.nframes == 64 for r in ev
    )


def test_rl_rows_cover_three_tasks_per_video(synth_dir: Path) -> None:
    rl = read_rows(synth_dir / "rl.parquet")
    assert len(rl) == 9  # rl_videos defaults to a quarter of the 10 train videos, rounded up
    assert sorted(r.extra_info.task for r in rl) == ["mcq"] * 3 + ["oe"] * 3 + ["tvg"] * 3
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
    assert synth_manifest.counts["rl"] == 9 and synth_manifest.counts["videos"]["rl"] == 3
    assert set(synth_manifest.needle) == {"train_prompts", "rl_prompts", "eval_prompts"}


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
        workers=1,
        scenes=SceneSpec(max_duration=120, needle_kinds=("flash",)),
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
            build(tmp_path / "bad", videos=1, eval_videos=0, scenes=SceneSpec(needle_kinds=bad))


def test_rl_prompts_have_videos_of_their_own_never_in_sft_or_base_data(synth_dir: Path) -> None:
    """Issue 38 item 6: the RL prompts' videos (their own rng stream, videos/rl/) are in no SFT
    trace and no row of the simulated base; the base keeps the train videos' prompts."""
    rl = read_rows(synth_dir / "rl.parquet")
    rl_videos = {v for r in rl for v in r.videos}
    assert rl_videos == {f"videos/rl/r{i:04d}.mp4" for i in range(3)}
    assert all((synth_dir / v).is_file() for v in rl_videos)
    sft = {v for r in read_rows(synth_dir / "sft.parquet") for v in r.videos}
    base = read_rows(synth_dir / "base.parquet")
    assert (
        sft
        and rl_videos.isdisjoint(sft)
        and rl_videos.isdisjoint(v for r in base for v in r.videos)
    )
    prompts = [r for r in base if r.kind == "rl"]
    assert len(prompts) == 30 and {v for r in prompts for v in r.videos} == sft
    assert {r.id for r in rl}.isdisjoint({r.id for r in prompts})


def test_rl_videos_is_a_parameter_recorded_in_the_manifest_and_zero_is_refused(
    tmp_path: Path,
) -> None:
    import pytest

    from paravt.errors import DataError

    m = build(
        tmp_path / "r",
        videos=1,
        rl_videos=2,
        eval_videos=0,
        seed=1,
        scenes=SceneSpec(max_duration=90),
    )
    assert m.params["rl_videos"] == 2 and m.counts["videos"] == {"train": 1, "rl": 2, "eval": 0}
    assert m.counts["rl"] == 6 and len(read_rows(tmp_path / "r" / "rl.parquet")) == 6
    with pytest.raises(DataError, match="rl_videos"):
        build(tmp_path / "bad", videos=1, rl_videos=0, eval_videos=0)
