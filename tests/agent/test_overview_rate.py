"""How many overview frames an episode shows, and when (issue 46, item 11): RL rollouts at
``video.overview_fps`` (1: min(n, round(duration)) frames, the paper's and the authors' RL);
`eval --data` and infer exactly n uniformly spread frames; `eval --benchmark` at
``eval.benchmark_fps`` (1, the paper's; None: exactly n, the authors' eval)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_episode import ScriptedGenerator, codec, video  # noqa: F401 - fixtures

from paravt.agent import EpisodeInput, EpisodeSettings, run_episode
from paravt.config import TrainConfig
from paravt.eval.benchmarks.base import EvalSample
from paravt.eval.benchmarks.protocol import Protocol, episode_inputs
from paravt.models.base import SamplingParams
from paravt.models.chat import ChatCodec
from paravt.protocol.tags import render_answer
from paravt.tools import build_toolset
from paravt.video import overview_count, target_times, write_video
from paravt.video.draw import solid


def test_the_count_at_one_fps_and_the_uniform_count() -> None:
    # a 20 s video: 20 frames at 1 fps whatever budget above 20; exactly n without a rate
    assert [overview_count(n, 20.0, 1.0) for n in (4, 16, 32, 64)] == [4, 16, 20, 20]
    assert [overview_count(n, 20.0, None) for n in (4, 16, 32, 64)] == [4, 16, 32, 64]
    # a 200 s video: the budget in both
    assert overview_count(64, 200.0, 1.0) == overview_count(64, 200.0, None) == 64
    # where they are aimed: slot centres, one a second at 1 fps on 20 s …
    assert target_times(0.0, 20.0, 20) == tuple(i + 0.5 for i in range(20))
    # … 20/64 = 0.3125 s apart when 64 are spread uniformly; 200/64 = 3.125 s on 200 s
    assert target_times(0.0, 20.0, 64)[:3] == (0.15625, 0.46875, 0.78125)
    assert target_times(0.0, 200.0, 64)[:2] == (1.5625, 4.6875)


def test_rl_settings_take_the_rate_and_eval_settings_do_not() -> None:
    cfg = TrainConfig()
    assert cfg.video.overview_fps == 1.0 and cfg.eval.benchmark_fps == 1.0
    assert EpisodeSettings.from_config(cfg, training=True).overview_fps == 1.0
    assert EpisodeSettings.from_config(cfg).overview_fps is None  # eval, infer
    off = cfg.model_copy(update={"video": cfg.video.model_copy(update={"overview_fps": None})})
    assert EpisodeSettings.from_config(off, training=True).overview_fps is None


def _overview(video: str, codec: ChatCodec, nframes: int, fps: float | None):  # noqa: F811
    gen = ScriptedGenerator(codec, [render_answer("It is blue.", "B", with_open_think=False)])
    settings = EpisodeSettings(
        mode="none",
        overview_max_pixels=64 * 64,
        overview_fps=fps,
        sampling=SamplingParams(temperature=0.0, max_new_tokens=64),
    )
    inp = EpisodeInput("q", video, "What colour?", "mcq", "B", ("A. red", "B. blue"), nframes)
    res = asyncio.run(
        run_episode(
            inp,
            generator=gen,
            codec=codec,
            settings=settings,
            episode_id="e",
            tools=build_toolset(["crop_video"]),
        )
    )
    assert res.answer == "B"
    (frames,) = gen.batches[0][0].videos
    return frames.timestamps


def test_a_short_video_gets_one_frame_a_second_in_rl_and_n_in_eval(
    video: str,  # noqa: F811
    codec: ChatCodec,  # noqa: F811
) -> None:
    # the fixture: 20 s at 2 fps (frames at 0, 0.5, …, 19.5 s); budget n = 64
    rl = _overview(video, codec, 64, 1.0)
    assert rl == tuple(i + 0.5 for i in range(20))  # the frame at each slot centre
    ev = _overview(video, codec, 64, None)
    # 64 targets 0.3125 s apart: nearest frames 0.0, 0.5, 1.0, 1.0 (1.09375 → 1.0), …, 19.5
    assert len(ev) == 64 and ev[:4] == (0.0, 0.5, 1.0, 1.0) and ev[-1] == 19.5


@pytest.fixture(scope="module")
def long_video(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = Path(tmp_path_factory.mktemp("long")) / "long.mp4"
    write_video(path, [solid(32, 32, (i % 250, 40, 90)) for i in range(80)], fps=1.0)
    return str(path)  # 80 s at 1 fps


def test_a_long_video_gets_the_budget_either_way(long_video: str, codec: ChatCodec) -> None:  # noqa: F811
    rl, ev = _overview(long_video, codec, 64, 1.0), _overview(long_video, codec, 64, None)
    # min(64, round(80)) = 64 = n: the same 64 frames, targets 0.625 + 1.25 i → the nearest second
    assert rl == ev and len(rl) == 64 and rl[:4] == (1.0, 2.0, 3.0, 4.0)


def test_the_benchmark_overview_is_exactly_the_budget_unless_a_rate_is_set(video: str) -> None:  # noqa: F811
    sample = EvalSample("s", "toy", video, "Q?", "mcq", "A", ("A. a", "B. b"))
    exact = Protocol(fps=None, max_frames=64, max_pixels=64, prompt_class="direct", scoring="lmms")
    rate = Protocol(fps=1.0, max_frames=64, max_pixels=64, prompt_class="direct", scoring="lmms")
    assert [i.nframes for i in episode_inputs([sample], exact)] == [64]
    assert [i.nframes for i in episode_inputs([sample], rate)] == [20]  # 20 s at 1 fps
