"""The reward switches that make a run's reward the authors' released one (issue 38), worked by hand
on both variants: PARA-GRPO (answer suffix, anchor) and vanilla GRPO (plain weights, no anchor)."""

import pytest

from paravt.protocol.tags import render_crop_call
from paravt.rewards import RewardWeights, compute_reward

PARA = RewardWeights.default()
VANILLA = RewardWeights.default(anchor_enabled=False, answer_suffix=False)
DIRECT = "I checked the overview.\n</think>\n<answer>A</answer>"
TOOLS = "Look at both halves.\n</think>\n" + render_crop_call(0, 30) + render_crop_call(30, 60)
REVERSION = "Looking at the video now.\n</think>\n<tool_code>\ncrop_video(80, 150)\n</tool_code>"


def score(text: str, w: RewardWeights, **kw):
    return compute_reward(text, task="mcq", answer="A", weights=w, **kw)


def test_answer_suffix_weights_on_a_direct_answer() -> None:
    # PARA: think 0.2 + <answer> 0.3 + </answer> 0.2 + balanced 0.1 = 0.8, + 0.5·0.7 capped at 1
    # vanilla: think 0.3 + <answer> 0.2 + </answer> 0.1 + balanced 0.1 = 0.7, no anchor
    assert score(DIRECT, PARA).format == pytest.approx(1.0)
    v = score(DIRECT, VANILLA)
    assert v.format == pytest.approx(0.7) and v.anchor == 0.0
    assert v.reward == pytest.approx(1 + 0.7 - 0.2)


def test_tool_use_under_both_variants() -> None:
    # two parseable calls, none executed (successful_calls 0), no answer
    p, v = score(TOOLS, PARA, successful_calls=0), score(TOOLS, VANILLA, successful_calls=0)
    # PARA base: think 0.2 + ordering 0.3 + balanced 0.1 = 0.6; anchor alpha 0.4 (no flow): 0.8
    assert p.format == pytest.approx(0.6 + 0.5 * 0.4) and p.tool == pytest.approx(0.1)
    # vanilla base: think 0.3 + ordering 0.3 + balanced 0.1 = 0.7
    assert v.format == pytest.approx(0.7) and v.tool == pytest.approx(0.1)


def test_tool_code_is_credited_as_released_and_not_when_switched_off() -> None:
    on = score(REVERSION, PARA, successful_calls=0)
    off = score(REVERSION, RewardWeights.default(credit_tool_code=False), successful_calls=0)
    # on: think 0.2 + ordering (a <tool_code> call) 0.3 + balanced 0.1 = 0.6, + 0.5·0.4 = 0.8
    assert on.format == pytest.approx(0.8) and on.tool == pytest.approx(0.1)
    assert on.n_parseable == 1 and on.n_calls == 0 and on.tool_code
    # off: no ordering, no tool credit: 0.3 + 0.2 = 0.5
    assert off.format == pytest.approx(0.5) and off.tool == 0.0 and off.n_parseable == 0


def test_comment_or_empty_tool_code_is_not_a_call() -> None:
    for body in ("", "# crop_video(1, 2)", "just words"):
        b = score(f"Some reasoning here.</think><tool_code>{body}</tool_code>", PARA)
        assert b.n_parseable == 0 and b.tool == 0.0


def test_joint_cap_against_anchor_outside() -> None:
    text = TOOLS + "<tool_response>x</tool_response><think>\nred\n</think><answer>A</answer>"
    joint = score(text, PARA, prefix="<think>\n", successful_calls=2)
    apart = score(
        text,
        RewardWeights.default(format_cap_includes_anchor=False),
        prefix="<think>\n",
        successful_calls=2,
    )
    assert joint.format == pytest.approx(1.0) and apart.format == pytest.approx(1.35)
    # R_tool as released: 0.1 parseable + 0.5 right answer (the 0.3 executed level is never seen)
    assert joint.reward == pytest.approx(1 + 1.0 + 0.6 - 0.2)


def test_score_prefix_off_scores_only_the_generated_tokens() -> None:
    blind = RewardWeights.default(score_prefix=False)
    b = score(DIRECT, blind)  # the forced "<think>\n" is not seen
    # no <think>: no think credit, no alpha, unbalanced: <answer> 0.3 + </answer> 0.2
    assert b.format == pytest.approx(0.5) and not b.closed_think
    assert b.format_generated == pytest.approx(0.5)
    seen = score(DIRECT, PARA)
    assert seen.format == pytest.approx(1.0) and seen.format_generated == pytest.approx(0.5)


def test_collapsed_rollout_of_appendix_d_earns_tool_credit_under_the_release() -> None:
    collapsed = (
        "Looking at the video, I can see a person in a kitchen " * 5
        + '<tool_code>python\ncrop_video("video.mp4", start=80, end=150)\n</tool_code>'
    )
    b = score(collapsed, PARA, successful_calls=0)
    # release rules: think 0.2 (content up to "<tool_", utils.py:12) + ordering 0.3 (<think>
    # opens before <tool_code>, utils.py:101-110, and the block holds a call line, utils.py:82-89)
    # + anchor 0.5 * -0.3 (no </think> anywhere, format.py:113); counts unequal (think 1 / 0): no
    # balance. R_fmt = 0.5 - 0.15 = 0.35; R_tool 0.1
    assert b.format == pytest.approx(0.35) and b.tool == pytest.approx(0.1)
    assert b.n_parseable == 1 and b.tool_code
    ours = score(collapsed, RewardWeights.default(format_rules="paravt"), successful_calls=0)
    # our rules: no ordering (no CLOSED think before the call): R_fmt = 0.2 - 0.15
    assert ours.format == pytest.approx(0.05) and ours.tool == pytest.approx(0.1)
