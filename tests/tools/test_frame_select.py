import asyncio

from tool_helpers import call

from paravt.tools import VisualBudget, build_toolset


def test_frame_select_caps_frames_by_fps_and_the_per_call_and_episode_budgets(make_ctx):
    # 320×240 video; resize 0.5 → target 160·120 = 19,200 px → smart resize (factor 32) gives
    # 96×160 = 15,360 px per frame.
    budget = VisualBudget(per_call_pixels=100_000, per_episode_pixels=200_000)
    ctx = make_ctx(budget=budget)
    ts = build_toolset(["frame_select"])

    def select(start, end, n):
        (obs,) = asyncio.run(
            ts.run_calls(
                ctx, [call("frame_select", start_time=start, end_time=end, nframes=n, resize=0.5)]
            )
        )
        return obs

    # call 1: 10 asked over 40 s (fps cap 40); per call 100,000 // 15,360 = 6 → 6 frames = 92,160 px
    a = select(0, 40, 10)
    assert a.ok and a.delivery == "inline" and len(a.frames) == 6
    assert (a.frames.height, a.frames.width) == (96, 160)
    assert budget.used_pixels == 92_160
    assert (
        "used 92,160 of 200,000 px this episode, 107,840 px left" in a.text and "asked 10" in a.text
    )
    # call 2: 8 asked over [0, 5] → 1 fps cap → 5 frames = 76,800 px → used 168,960
    b = select(0, 5, 8)
    assert len(b.frames) == 5 and budget.used_pixels == 168_960
    # call 3: 31,040 px left → 31,040 // 15,360 = 2 frames → used 199,680
    c = select(10, 30, 4)
    assert len(c.frames) == 2 and budget.used_pixels == 199_680 and "320 px left" in c.text
    # call 4: not one frame fits → error, nothing charged
    d = select(10, 30, 1)
    assert (
        not d.ok
        and "exceeds the visual budget: 320 px left" in d.error
        and budget.used_pixels == 199_680
    )
    assert budget.calls == 3


def test_frame_select_rejects_a_resize_outside_zero_to_one(make_ctx):
    ts = build_toolset(["frame_select"])
    ctx = make_ctx()
    (obs,) = asyncio.run(
        ts.run_calls(ctx, [call("frame_select", start_time=0, end_time=4, nframes=2, resize=2)])
    )
    assert not obs.ok and "resize=2 is outside (0, 1]" in obs.error and ctx.budget.used_pixels == 0


def test_concurrent_frame_selects_of_one_turn_are_charged_in_call_order(make_ctx):
    # resize 1 → target 76,800 px; 240×320 rounds to 256×320 = 81,920 > 76,800, so both sides
    # are floored to multiples of 32 at ratio 1: 224×320 = 71,680 px per frame. The episode
    # budget holds 4 frames: the first call takes 3, the second only the 1 left.
    one = 224 * 320
    budget = VisualBudget(per_call_pixels=10 * one, per_episode_pixels=4 * one)
    ctx = make_ctx(budget=budget)
    obs = asyncio.run(
        build_toolset(["frame_select"]).run_calls(
            ctx,
            [
                call("frame_select", start_time=0, end_time=10, nframes=3),
                call("frame_select", index=1, start_time=20, end_time=30, nframes=3),
            ],
        )
    )
    assert [len(o.frames) for o in obs] == [3, 1]
    assert (obs[0].frames.height, obs[0].frames.width) == (224, 320)
    assert budget.used_pixels == 4 * one


def test_default_budget_is_sixteen_frames_per_call_and_sixty_four_per_episode():
    b = VisualBudget()
    assert b.per_call_pixels == 16 * 224 * 224 and b.per_episode_pixels == 64 * 224 * 224
    assert b.affordable_frames(224 * 224) == 16
