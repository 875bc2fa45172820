import asyncio
import shutil
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from server_helpers import ServerThread
from tool_helpers import call

from paravt.config import ToolServerConfig
from paravt.protocol.prompts import ToolSpec
from paravt.tools import Observation, VisualBudget, build_toolset, register_tool, unregister_tool
from paravt.tools.server.app import create_app
from paravt.tools.server.client import RemoteToolSet
from paravt.video import clear_cache


def _mixed_batch():
    return [
        call("crop_video", start_time=30, end_time=100),
        call("frame_select", index=1, start_time=0, end_time=10, nframes=4, resize=0.5),
        call("crop_video", index=2, start_time=50, end_time=60),
        call("zoom", index=3, factor=2),
        call("frame_select", index=4, start_time=12.5, end_time=19.25, nframes=3),
    ]


def _assert_same(a: Observation, b: Observation) -> None:
    assert (a.text, a.window, a.error, a.delivery, dict(a.metrics)) == (
        b.text,
        b.window,
        b.error,
        b.delivery,
        dict(b.metrics),
    )
    assert (a.frames is None) == (b.frames is None)
    if a.frames is not None:
        assert a.frames.array.dtype == b.frames.array.dtype == np.uint8
        assert a.frames.array.shape == b.frames.array.shape
        assert a.frames.array.tobytes() == b.frames.array.tobytes()  # bit-identical
        assert a.frames.timestamps == b.frames.timestamps


def _cfg(video: str, **kw) -> ToolServerConfig:
    return ToolServerConfig(video_roots=[str(Path(video).parent)], **kw)


def test_local_and_remote_toolsets_give_identical_observations_and_budgets(make_ctx, video):
    names = ["crop_video", "frame_select"]
    local_ctx = make_ctx(episode_id="t-local", budget=VisualBudget(per_episode_pixels=150_000))
    local = asyncio.run(build_toolset(names).run_calls(local_ctx, _mixed_batch()))
    clear_cache()  # the server decodes again rather than reusing this process's cached frames
    with ServerThread(create_app(names, _cfg(video))) as srv:
        remote_ts = build_toolset(names, server_url=srv.url)
        assert isinstance(remote_ts, RemoteToolSet) and [s.name for s in remote_ts.specs] == names
        remote_ctx = make_ctx(
            episode_id="t-remote", budget=VisualBudget(per_episode_pixels=150_000)
        )

        async def go(ctx):
            try:
                return await remote_ts.run_calls(ctx, _mixed_batch())
            finally:
                await remote_ts.aclose()

        remote = asyncio.run(go(remote_ctx))
        again = asyncio.run(
            go(make_ctx(episode_id="t-again"))
        )  # a new event loop: a new client pool
    assert [o.ok for o in local] == [True, True, False, False, True]
    for a, b in zip(local, remote):
        _assert_same(a, b)
    assert again[0].ok and again[0].frames.array.tobytes() == local[0].frames.array.tobytes()
    assert remote_ctx.budget == VisualBudget(
        per_episode_pixels=150_000, used_pixels=local_ctx.budget.used_pixels, calls=2
    )
    # select 1: 4 × 15,360 px (resize 0.5 → 96×160) = 61,440; 88,560 px left, so select 2 (resize 1
    # → 224×320 = 71,680 px per frame) gets 88,560 // 71,680 = 1 frame of the 3 asked
    assert local_ctx.budget.used_pixels == 61_440 + 71_680
    assert len(local[4].frames) == 1 and "asked 3" in local[4].text


class _Sleepy:
    name = "sleepy"
    spec = ToolSpec("sleepy", "sleeps", {"type": "object", "properties": {"s": {"type": "number"}}})
    timeout_s = 30.0

    async def run(self, ctx, args):
        await asyncio.sleep(float(args.get("s", 0)))
        return Observation(text="awake")


@pytest.fixture
def sleepy():
    register_tool("sleepy", _Sleepy, origin="test:sleepy")
    yield
    unregister_tool("sleepy")


def test_a_request_over_its_timeout_gets_a_timeout_error_and_frees_its_slot(
    make_ctx, video, sleepy
):
    app = create_app(["sleepy"], _cfg(video, max_concurrency=1, request_timeout_s=0.5))
    with ServerThread(app) as srv:
        ts = RemoteToolSet(srv.url, ["sleepy"])

        async def go():
            t0 = time.perf_counter()
            (slow,) = await ts.run_calls(make_ctx(), [call("sleepy", s=10)])
            t1 = time.perf_counter()
            (fast,) = await ts.run_calls(make_ctx(), [call("sleepy", s=0)])
            await ts.aclose()
            return slow, fast, t1 - t0, time.perf_counter() - t1

        slow, fast, slow_s, fast_s = asyncio.run(go())
        metrics = httpx.get(srv.url + "/metrics").text
        health = httpx.get(srv.url + "/health").json()
    assert slow.error == "tool server error 504: request timed out after 0.5 s" and slow_s < 3.0
    assert fast.ok and fast.text == "awake" and fast_s < 2.0  # the only slot was freed
    assert (
        "paravt_tool_request_timeouts_total 1" in metrics
        and "paravt_tool_requests_total 2" in metrics
    )
    assert 'paravt_tool_calls_total{outcome="ok",tool="sleepy"} 1' in metrics
    assert health["inflight"] == 0 and health["max_concurrency"] == 1


def test_tool_server_serves_a_concurrent_loopback_load_without_errors(make_ctx, video):
    n_requests, concurrency = 240, 32
    with ServerThread(
        create_app(["crop_video", "frame_select"], _cfg(video, max_concurrency=16))
    ) as srv:
        ts = RemoteToolSet(srv.url, ["crop_video", "frame_select"])

        async def client(k: int, out: list) -> None:
            for i in range(k, n_requests, concurrency):
                ctx = make_ctx(episode_id=f"load-{i}", crop_max_frames=4, crop_max_pixels=64 * 64)
                t0 = time.perf_counter()
                obs = await ts.run_calls(
                    ctx,
                    [
                        call("crop_video", start_time=i % 30, end_time=i % 30 + 8),
                        call(
                            "frame_select",
                            index=1,
                            start_time=0,
                            end_time=4,
                            nframes=2,
                            resize=0.25,
                        ),
                    ],
                )
                out.append((time.perf_counter() - t0, obs))

        async def go():
            out: list = []
            await asyncio.gather(*(client(k, out) for k in range(concurrency)))
            await ts.aclose()
            return out

        results = asyncio.run(go())
        metrics = httpx.get(srv.url + "/metrics").text
    errors = [o.error for _, obs in results for o in obs if not o.ok]
    assert len(results) == n_requests and errors == []
    assert all(
        len(obs[0].frames) == 4 and obs[0].frames.height * obs[0].frames.width <= 64 * 64
        for _, obs in results
    )
    assert f"paravt_tool_requests_total {n_requests}" in metrics
    assert f"paravt_tool_request_latency_seconds_count {n_requests}" in metrics


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_python_state_is_per_trajectory_and_released_by_finish_or_idle_ttl(make_ctx, video):
    app = create_app(
        ["python"], _cfg(video, idle_ttl_s=3.0)
    )  # generous: a sandbox start takes ~1 s on a busy machine
    tool = app.state.toolset.tools["python"]
    with ServerThread(app) as srv:
        ts = RemoteToolSet(srv.url, ["python"])
        a, b = make_ctx(episode_id="traj-a"), make_ctx(episode_id="traj-b")

        async def go():
            await ts.run_calls(a, [call("python", code="x = 'a'")])
            await ts.run_calls(b, [call("python", code="x = 'b'")])
            (xa,) = await ts.run_calls(a, [call("python", code="x")])
            (xb,) = await ts.run_calls(b, [call("python", code="x")])
            active_before = tool.active_runtimes
            await ts.finish(a)
            active_after_finish = tool.active_runtimes
            await asyncio.sleep(4.0)  # b idles past the TTL
            await ts.aclose()
            return xa, xb, active_before, active_after_finish, tool.active_runtimes

        xa, xb, before, after_finish, after_ttl = asyncio.run(go())
    assert (xa.text, xb.text) == ("'a'", "'b'")
    assert (before, after_finish, after_ttl) == (2, 1, 0)
