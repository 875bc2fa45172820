"""EVA's Reflector rules, each with hand-worked numbers (paravt.distill.reflector)."""

from __future__ import annotations

from paravt.distill.reflector import FrameCall, max_resize_for, reflect

D = 120.0


def test_no_change_for_a_sound_call() -> None:
    r = reflect(
        FrameCall(30, 60, 20, 0.8),
        [FrameCall(0, D, 30, 0.5)],
        duration=D,
        think="The cup is near 40 s.",
    )
    assert r.no_change and r.call == FrameCall(30, 60, 20, 0.8)


def test_global_miss_rescans_globally_denser_and_sharper() -> None:
    prev = FrameCall(0, D, 20, 0.2)  # budget 4 would be raised, but it is history: it already ran
    r = reflect(
        FrameCall(10, 30, 10, 0.3), [prev], duration=D, think="I found nothing in the scan."
    )
    # whole video, nframes = max(10, 3 × 20) = 60 (≤ 120 s at 1 fps), resize = max(0.3, 0.2, 0.5) =
    # 0.5
    assert r.call == FrameCall(0, D, 60, 0.5) and r.fired == ("global_miss",)


def test_global_miss_needs_a_global_previous_scan_and_a_miss() -> None:
    think = "Nothing visible there."
    assert (
        "global_miss"
        not in reflect(
            FrameCall(10, 30, 20, 1.0), [FrameCall(40, 60, 20, 1.0)], duration=D, think=think
        ).fired
    )
    assert reflect(
        FrameCall(10, 30, 20, 1.0),
        [FrameCall(0, D, 30, 0.5)],
        duration=D,
        think="The event is at 20 s.",
    ).no_change


def test_dense_repeat_widens_instead_of_resampling_the_same_segment() -> None:
    hist = [FrameCall(40, 60, 20, 1.0)]  # 1 fps already
    r = reflect(FrameCall(45, 65, 20, 1.0), hist, duration=D, think="Look again.")
    # overlap 15 s ≥ half of 20 s → window doubled around its centre 55: [35, 75]; 20 frames = 0.5
    # fps
    assert r.call == FrameCall(35, 75, 20, 1.0) and r.fired == ("dense_repeat",)


def test_dense_repeat_is_not_triggered_by_a_sparse_earlier_pass() -> None:
    assert reflect(FrameCall(45, 65, 20, 1.0), [FrameCall(40, 60, 5, 1.0)], duration=D).no_change


def test_low_budget_raises_frames_then_resize() -> None:
    # 10 × 0.1 = 1 < 15 → nframes 15 (≤ 120 at 1 fps), resize ⌈15/15⌉ = 1.0
    r = reflect(FrameCall(0, D, 10, 0.1), [], duration=D)
    assert r.call == FrameCall(0, D, 15, 1.0) and r.fired == ("low_budget",)
    # 20 × 0.5 = 10 → frames stay 20 (already ≥ 15), resize 15/20 = 0.75
    assert reflect(FrameCall(0, 60, 20, 0.5), [], duration=D).call == FrameCall(0, 60, 20, 0.75)


def test_fps_above_one_is_lowered() -> None:
    r = reflect(FrameCall(50, 70.5, 40, 1.0), [], duration=D)
    assert r.call == FrameCall(50, 70.5, 20, 1.0) and r.fired == ("fps_cap",)


def test_short_window_gets_full_resolution_and_the_fps_cap() -> None:
    # 10 s window, 30 × 0.5: capped frames 10 × 0.5 = 5 < 15 → resize 1.0; then 30 → 10 frames
    r = reflect(FrameCall(50, 60, 30, 0.5), [], duration=D)
    assert r.call == FrameCall(50, 60, 10, 1.0) and r.fired == ("low_budget", "fps_cap")


def test_pixel_cap_keeps_one_hd_frame_inside_the_tool_budget() -> None:
    per_call = 16 * 224 * 224  # frame_select's default per-call budget: 802,816 px
    m = max_resize_for(1280, 720, per_call)  # √(802,816 / 921,600) = 0.933… → 0.93
    assert m == 0.93 and max_resize_for(64, 64, per_call) == 1.0
    r = reflect(
        FrameCall(50, 60, 30, 0.5), [], duration=D, max_resize=m
    )  # rule 3 would ask resize 1
    assert r.call == FrameCall(50, 60, 10, 0.93) and r.fired == ("low_budget", "fps_cap")
    assert reflect(FrameCall(0, 60, 20, 1.0), [], duration=D, max_resize=m).fired == ("pixel_cap",)
