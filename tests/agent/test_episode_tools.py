"""Mixed tools in one parallel turn, in-process and through the HTTP tool server: same trajectory.

``ScriptedGenerator`` (see test_episode.py) stands in for the inference server so that both runs
see the same model outputs; the tools, the video and the server are real.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np
import pytest

from paravt.agent import EpisodeInput, EpisodeSettings, run_episode
from paravt.config import ToolServerConfig
from paravt.models.base import SamplingParams
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_processor
from paravt.protocol.tags import render_answer, render_crop_call, render_tool_call, render_tool_turn
from paravt.tools import build_toolset
from paravt.tools.server.app import create_app
from paravt.video import write_video
from paravt.video.draw import solid

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from server_helpers import ServerThread  # noqa: E402
from test_episode import ScriptedGenerator  # noqa: E402

TOOLS = ["crop_video", "frame_select"]
TURN1 = render_tool_turn(
    "Look twice.",
    [
        render_crop_call(0, 6),
        render_tool_call(
            "frame_select", {"start_time": 6, "end_time": 12, "nframes": 3, "resize": 1.0}
        ),
        render_crop_call(12, 18),
    ],
    with_open_think=False,
)
TURN2 = render_answer("Seen.", "A", with_open_think=False)


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = Path(tmp_path_factory.mktemp("mix")) / "v.mp4"
    write_video(path, [solid(64, 64, (10 * (i % 20), 100, 60)) for i in range(40)], fps=2.0)
    path.chmod(0o644)
    return str(path)


def _run(video: str, codec: ChatCodec, tools):
    gen = ScriptedGenerator(codec, [TURN1, TURN2])
    settings = EpisodeSettings(
        mode="parallel",
        overview_max_pixels=64 * 64,
        crop_max_pixels=64 * 64,
        crop_max_frames=4,
        sampling=SamplingParams(temperature=0.0, max_new_tokens=64),
    )
    inp = EpisodeInput("mix", video, "Which colour?", "mcq", "A", ("A. red", "B. blue"), 4)
    return asyncio.run(
        run_episode(
            inp, generator=gen, codec=codec, settings=settings, episode_id="mix", tools=tools
        )
    )


def test_mixed_turn_local_and_through_the_tool_server_give_identical_trajectories(
    video: str, tiny_qwen3_dir: str
) -> None:
    codec = ChatCodec(load_processor(tiny_qwen3_dir))
    local = _run(video, codec, build_toolset(TOOLS))
    with ServerThread(
        create_app(TOOLS, ToolServerConfig(video_roots=[str(Path(video).parent)]))
    ) as srv:
        remote = _run(video, codec, build_toolset(TOOLS, server_url=srv.url))
    # crop windows went to 2 sub-agents; frame_select's 3 frames came back inline as a video
    assert [c.name for c in local.calls] == ["crop_video", "frame_select", "crop_video"]
    assert all(c.ok for c in local.calls) and len(local.subs) == 2
    assert len(local.main.videos) == 2 and len(local.main.videos[1]) == 3
    for a, b in zip(local.trajectories, remote.trajectories, strict=True):
        assert a.ids == b.ids and a.loss_mask == b.loss_mask and a.logprobs == b.logprobs
        assert len(a.videos) == len(b.videos)
        for va, vb in zip(a.videos, b.videos, strict=True):
            assert np.array_equal(va.array, vb.array) and va.timestamps == vb.timestamps
    assert [c.summary for c in local.calls] == [c.summary for c in remote.calls]


def test_on_demand_context_shows_no_overview_only_metadata(video: str, tiny_qwen3_dir: str) -> None:
    """Overview budget 0 (PyVision-RL on-demand context): the prompt carries duration/fps/size and
    every frame the agent sees comes through tools."""
    codec = ChatCodec(load_processor(tiny_qwen3_dir))
    gen = ScriptedGenerator(codec, [TURN1, TURN2])
    settings = EpisodeSettings(
        mode="parallel",
        crop_max_pixels=64 * 64,
        crop_max_frames=4,
        sampling=SamplingParams(temperature=0.0, max_new_tokens=64),
    )
    inp = EpisodeInput("od", video, "Which colour?", "mcq", "A", ("A. red", "B. blue"), nframes=0)
    res = asyncio.run(
        run_episode(
            inp,
            generator=gen,
            codec=codec,
            settings=settings,
            episode_id="od",
            tools=build_toolset(TOOLS),
        )
    )
    user = gen.batches[0][0].messages[1]
    assert (
        user.videos == () and "<video>" not in user.content and "20" in user.content
    )  # 20 s duration
    assert len(res.main.videos) == 1  # only frame_select's frames, none from an overview


def test_eva_style_plans_then_perceives_one_call_per_turn(video: str, tiny_qwen3_dir: str) -> None:
    codec = ChatCodec(load_processor(tiny_qwen3_dir))
    gen = ScriptedGenerator(codec, [TURN1, TURN2])
    settings = EpisodeSettings(
        mode="eva",
        crop_max_pixels=64 * 64,
        crop_max_frames=4,
        sampling=SamplingParams(temperature=0.0, max_new_tokens=64),
    )
    inp = EpisodeInput("eva", video, "Which colour?", "mcq", "A", ("A. red", "B. blue"), nframes=0)
    res = asyncio.run(
        run_episode(
            inp,
            generator=gen,
            codec=codec,
            settings=settings,
            episode_id="eva",
            tools=build_toolset(TOOLS),
        )
    )
    system = gen.batches[0][0].messages[0].content
    assert "plan" in system and "frame_select" in system and "ONE tool call per turn" in system
    assert [c.ok for c in res.calls] == [True, False, False]  # one call per turn
