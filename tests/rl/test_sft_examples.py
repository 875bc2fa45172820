"""The SFT rows as training sequences (`paravt.rl.sft.load_examples`, built by
`paravt.rl.sequence.trace_sequences`): the frames each row shows, at the sizes an episode shows
them."""

from __future__ import annotations

from pathlib import Path

from paravt.agent.trajectory import Trajectory
from paravt.config import VideoConfig
from paravt.data.schema import read_rows
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import LoadedPolicy
from paravt.rl.sft import load_examples


def test_sft_rows_show_their_frames_as_an_episode_does(
    short_synth: Path, policy: LoadedPolicy
) -> None:
    """`load_examples` decodes through `trace_sequences`: a main trace's whole-video overview at the
    overview size, its re-injected windows (sequential traces) at the crop size, and everything a
    sub-agent trace shows at the crop size."""
    codec = ChatCodec(policy.processor)
    video = VideoConfig(overview_max_pixels=64 * 64, crop_max_pixels=32 * 32)
    got = load_examples(short_synth / "sft.parquet", None, codec, video, include_sub=True)
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
