import asyncio
import time
from pathlib import Path

import pytest
from tool_helpers import call

from paravt.errors import ConfigError
from paravt.protocol.prompts import CROP_VIDEO_SPEC
from paravt.tools import LocalToolSet, Observation, ToolContext, build_toolset


def run(coro):
    return asyncio.run(coro)


def test_crop_video_clamps_the_window_and_samples_at_most_one_frame_per_second(make_ctx):
    ts = build_toolset(["crop_video"])
    ctx = make_ctx()
    # [30, 100] on a 40 s video → [30, 40]: 10 s at crop_fps=1 → 10 frames (< 16 cap)
    # [-5, 39] → [0, 39]: 39 frames at 1 fps, capped by crop_max_frames=16
    a, b = run(
        ts.run_calls(
            ctx,
            [
                call("crop_video", start_time=30, end_time=100),
                call("crop_video", index=1, start_time=-5, end_time=39),
            ],
        )
    )
    assert a.ok and a.window == (30.0, 40.0) and a.delivery == "subagent"
    assert len(a.frames) == 10 and all(30.0 <= t <= 40.0 for t in a.frames.timestamps)
    assert b.window == (0.0, 39.0) and len(b.frames) == 16
    # 320×240 under 224·224 px, factor 32 → 192×256 (smart resize, see paravt.video.decode)
    assert (a.frames.height, a.frames.width) == (192, 256)
    # frame i is grey 3·i and frames come at 2 fps: the first slot centre of [30, 40] is 30.5 s
    assert abs(float(a.frames.array[0].mean()) - 3 * 2 * a.frames.timestamps[0]) < 4


def test_crop_video_window_outside_the_video_is_an_error_observation(make_ctx):
    ts = build_toolset(["crop_video"])
    (obs,) = run(ts.run_calls(make_ctx(), [call("crop_video", start_time=50, end_time=60)]))
    assert not obs.ok and "does not overlap the video [0, 40" in obs.error and obs.frames is None


def test_crop_video_on_a_broken_file_returns_an_error_not_an_exception(make_ctx, video, tmp_path):
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(Path(video).read_bytes()[:3000])  # header only: the frames are gone
    ctx = make_ctx()
    ctx = ToolContext(episode_id="b", video=str(broken), info=ctx.info)
    (obs,) = run(
        build_toolset(["crop_video"]).run_calls(
            ctx, [call("crop_video", start_time=0, end_time=10)]
        )
    )
    assert not obs.ok and "decode" in obs.error.lower() and obs.text.startswith("Error:")


def test_parse_errors_unknown_tools_and_bad_arguments_fail_only_their_own_call(make_ctx):
    ts = build_toolset(["crop_video", "frame_select"])
    calls = [
        call(None, error="unclosed <tool_call>"),
        call("crop_vide", start_time=0, end_time=5),
        call("crop_video", start_time=0),
        call("crop_video", start_time="abc", end_time=3),
        call("crop_video", start_time="00:02", end_time=6),
    ]
    obs = run(ts.run_calls(make_ctx(), calls))
    assert [o.ok for o in obs] == [False, False, False, False, True]
    assert obs[0].error == "unclosed <tool_call>"
    assert (
        "Did you mean 'crop_video'?" in obs[1].error
        and "Available: crop_video, frame_select" in obs[1].error
    )
    assert "missing 'end_time'" in obs[2].error
    assert "not a number" in obs[3].error
    assert obs[4].window == (2.0, 6.0)  # "00:02" parsed as 2 s


class _Sleepy:
    name = "sleepy"
    spec = type(CROP_VIDEO_SPEC)(
        "sleepy", "sleeps", {"type": "object", "properties": {"s": {"type": "number"}}}
    )
    timeout_s = 30.0

    async def run(self, ctx, args):
        await asyncio.sleep(float(args.get("s", 0)))
        if args.get("boom"):
            raise RuntimeError("tool bug")
        return Observation(text=f"slept {args.get('s', 0)}")


def test_each_call_runs_under_its_own_timeout_concurrently_and_in_call_order(make_ctx):
    ts = LocalToolSet([_Sleepy()], timeouts={"sleepy": 0.3})
    t0 = time.perf_counter()
    obs = run(
        ts.run_calls(
            make_ctx(),
            [
                call("sleepy", s=5),
                call("sleepy", s=0.1),
                call("sleepy", s=0.2),
                call("sleepy", s=0, boom=True),
            ],
        )
    )
    elapsed = time.perf_counter() - t0
    assert elapsed < 1.5  # concurrent: not 5.3 s, and the 5 s call was cut at 0.3 s
    assert obs[0].error == "sleepy timed out after 0.3 s" and obs[0].metrics["timeout"] == 1.0
    assert [o.text for o in obs[1:3]] == ["slept 0.1", "slept 0.2"]
    assert obs[3].error == "sleepy failed: RuntimeError: tool bug"


def test_build_toolset_rejects_unknown_and_duplicate_names():
    with pytest.raises(
        ConfigError, match=r"unknown tool 'frame_selct'\. Did you mean 'frame_select'\?"
    ):
        build_toolset(["crop_video", "frame_selct"])
    with pytest.raises(ConfigError, match="duplicates"):
        build_toolset(["crop_video", "crop_video"])


def test_toolset_specs_follow_the_enabled_tools_in_order():
    ts = build_toolset(["python", "crop_video"])
    assert [s.name for s in ts.specs] == ["python", "crop_video"]
    assert ts.names == frozenset({"python", "crop_video"})
    assert ts.specs[1] is CROP_VIDEO_SPEC
