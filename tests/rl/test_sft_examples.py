"""The SFT rows as training sequences (`paravt.rl.sft.load_examples`, built by
`paravt.rl.sequence.trace_sequences`): the frames each row shows, at the sizes an episode shows
them."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from paravt.agent.trajectory import Trajectory
from paravt.config import VideoConfig
from paravt.data.rows import ExtraInfo, Mode, SFTRow
from paravt.data.schema import read_rows
from paravt.errors import ConfigError
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import LoadedPolicy
from paravt.rl.sft import load_examples, pick_subagent_rows


def test_sft_rows_show_their_frames_as_an_episode_does(
    short_synth: Path, policy: LoadedPolicy
) -> None:
    """`load_examples` decodes through `trace_sequences`: a main trace's whole-video overview at the
    overview size, its re-injected windows (sequential traces) at the crop size, and everything a
    sub-agent trace shows at the crop size."""
    codec = ChatCodec(policy.processor)
    video = VideoConfig(overview_max_pixels=64 * 64, crop_max_pixels=32 * 32)
    got = load_examples(short_synth / "sft.parquet", None, codec, video, subagent_rows=1.0, seed=0)
    rows = {r.id: r for r in read_rows(short_synth / "sft.parquet")}

    def pixels(t: Trajectory) -> list[int]:
        return [f.height * f.width for f in t.videos]

    mains = [t for t in got if rows[t.episode_id].kind == "main" and t.videos]
    subs = [t for t in got if rows[t.episode_id].kind == "sub"]
    seq = [t for t in mains if rows[t.episode_id].mode == "sequential"]
    assert mains and subs and seq
    assert all(pixels(t)[0] == 64 * 64 for t in mains)  # the overview
    assert all(p <= 32 * 32 for t in seq for p in pixels(t)[1:])  # the windows it was shown
    assert all(len(pixels(t)) > 1 for t in seq)
    assert all(p <= 32 * 32 for t in subs for p in pixels(t))


def _row(rid: str, kind: Literal["main", "sub"]) -> SFTRow:
    extra = ExtraInfo(rid, "oe", "What colour is the brief flash?", "red", 60.0)
    mode: Mode = "sub" if kind == "sub" else "parallel"
    return SFTRow(rid, kind, mode, (), ("v.mp4",), extra)


def test_sft_trains_every_main_row_and_a_seeded_share_of_the_sub_agent_rows() -> None:
    """`sft.subagent_rows` (docs/fidelity.md rows 69-70): 0 keeps the main traces only (the
    paper's pool), a share keeps round(share × count) sub-agent rows (at least one) drawn by the
    seed, in the data's order; the draw is pinned, since it decides the demo's SFT pool."""
    rows = [_row(f"m{i}", "main") for i in range(4)] + [_row(f"s{i}", "sub") for i in range(10)]
    rows = rows[::2] + rows[1::2]  # m0 m2 s0 s2 s4 s6 s8 m1 m3 s1 s3 s5 s7 s9

    def ids(share: float, seed: int = 0) -> list[str]:
        return [r.id for r in pick_subagent_rows(rows, share, seed)]

    assert ids(0.0) == ["m0", "m2", "m1", "m3"]
    assert ids(1.0) == [r.id for r in rows]
    assert ids(0.3) == ["m0", "m2", "s6", "m1", "m3", "s5", "s7"]
    assert ids(0.01) == ["m0", "m2", "s6", "m1", "m3"]  # a share > 0 trains at least one
    assert ids(0.3) == ids(0.3)  # the same draw for the same seed
    # another seed, another draw
    assert {tuple(ids(0.3, seed)) for seed in range(6)} != {tuple(ids(0.3))}
    with pytest.raises(ConfigError, match="subagent_rows"):
        pick_subagent_rows(rows, 1.5, 0)
