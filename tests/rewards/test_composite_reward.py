import pytest

from paravt.config import RewardConfig
from paravt.protocol.stats import format_stats
from paravt.protocol.tags import render_crop_call
from paravt.rewards import (
    RewardWeights,
    anchor_reward,
    base_format_reward,
    compute_reward,
    tool_reward,
)

W = RewardWeights.default()
#: ours before issue 46: next-tag format rules, R_tool's executed level read from the episode
OURS = RewardWeights.default(format_rules="paravt", tool_sees_responses=True)
GOOD = "I checked the overview.\n</think>\n<answer>A</answer>"
TOOLS = "Look at both halves.\n</think>\n" + render_crop_call(0, 30) + render_crop_call(30, 60)


def test_weights_from_config_are_the_papers() -> None:
    assert RewardWeights.from_config(RewardConfig()) == W
    w = RewardWeights.from_config(RewardConfig(anchor=False, tool_mode="accumulative", bias=0.0))
    assert (w.anchor_enabled, w.tool_mode, w.bias) == (False, "accumulative", 0.0)


def test_base_and_weighted_anchor_share_one_cap_by_default() -> None:
    text = (
        "<think>\n"
        + TOOLS
        + "<tool_response>x</tool_response><think>\nred\n</think><answer>A</answer>"
    )
    s = format_stats(text)
    for rules in ("release", "paravt"):
        base = base_format_reward(s, answer_suffix=True, credit_tool_code=True, rules=rules)
        assert base == 1.0  # 0.2 + 0.3 + 0.2 + 0.3 + 0.1 = 1.1, capped
        anchor = anchor_reward(s, alpha=0.4, beta=0.3, gamma=0.3, rules=rules)
        assert anchor == pytest.approx(0.7)
    b = compute_reward(text, task="mcq", answer="A", weights=W, prefix="")
    # the release: min(1.1 + 0.5 * 0.7, 1) = 1.0; R_tool graduated: the release's reward never
    # sees a <tool_response> (tool_sees_responses off): 0.1 parseable + 0.5 right answer
    assert b.format == pytest.approx(1.0) and b.tool == pytest.approx(0.6)
    assert b.reward == pytest.approx(1 + 1.0 + 0.6 - 0.2)
    seen = compute_reward(text, task="mcq", answer="A", weights=OURS, prefix="")
    # with tool_sees_responses: offline, the <tool_response> in the text counts as executed: 0.3
    assert seen.tool == pytest.approx(0.8) and seen.reward == pytest.approx(1 + 1.0 + 0.8 - 0.2)
    apart = RewardWeights.default(format_cap_includes_anchor=False)
    b2 = compute_reward(text, task="mcq", answer="A", weights=apart, prefix="")
    assert b2.format == pytest.approx(1.0 + 0.5 * 0.7)  # R_base capped alone, anchor outside


def test_direct_answer_earns_no_think_first() -> None:
    # think 0.2 + <answer> 0.3 + </answer> 0.2 + balanced 0.1 = 0.8 (no tool call: no +0.3 ordering)
    b = compute_reward(GOOD, task="mcq", answer="A", weights=W)
    assert b.format_base == pytest.approx(0.8) and b.anchor == pytest.approx(0.7)
    assert b.format == pytest.approx(1.0)  # min(0.8 + 0.5 * 0.7, 1): the joint cap
    assert b.reward == pytest.approx(1 + 1.0 - 0.2)
    apart = RewardWeights.default(format_cap_includes_anchor=False)
    b2 = compute_reward(GOOD, task="mcq", answer="A", weights=apart)
    assert b2.format == pytest.approx(0.8 + 0.5 * 0.7)  # 1.15


@pytest.mark.parametrize("body", ["", "   ", "\n\t"])
def test_empty_answer_earns_no_answer_credit_and_no_flow(body: str) -> None:
    b = compute_reward(
        f"I checked the overview.\n</think>\n<answer>{body}</answer>",
        task="mcq",
        answer="A",
        weights=W,
    )
    # base: think 0.2 + balanced 0.1 = 0.3; anchor: closed think 0.4, no flow (+0.3) for an empty
    # answer
    assert (b.format_base, b.anchor) == (pytest.approx(0.3), pytest.approx(0.4))
    assert b.format == pytest.approx(0.3 + 0.5 * 0.4) and b.closed_answer  # the tags did close


def test_unclosed_filled_answer_earns_the_open_credit_only_under_our_rules() -> None:
    text = "I checked the overview.\n</think>\n<answer>A"
    b = compute_reward(text, task="mcq", answer="A", weights=OURS)
    # think 0.2 + <answer> 0.3 (filled, unclosed: no 0.2, unbalanced: no 0.1); anchor 0.4 (no flow)
    assert (b.format_base, b.anchor, b.acc) == (pytest.approx(0.5), pytest.approx(0.4), 1.0)
    r = compute_reward(text, task="mcq", answer="A", weights=W)
    # release: no closed, non-empty pair, no answer credit at all: think 0.2; anchor 0.4
    assert (r.format_base, r.anchor, r.acc) == (pytest.approx(0.2), pytest.approx(0.4), 1.0)


def test_format_ref_is_the_default_yardstick_whatever_the_weights() -> None:
    off = RewardWeights.default(anchor_enabled=False, lambda_anchor=0.9, alpha=0.1)
    a, b = (
        compute_reward(GOOD, task="mcq", answer="A", weights=off),
        compute_reward(GOOD, task="mcq", answer="A", weights=W),
    )
    assert a.format == pytest.approx(0.8) and b.format == pytest.approx(1.0)  # terms differ
    assert a.format_ref == b.format_ref == pytest.approx(1.0)  # one yardstick


def test_default_weights_are_written_once() -> None:
    assert RewardWeights.default() == RewardWeights.from_config(RewardConfig())


def graded(letter: str) -> str:
    return (
        TOOLS + "<tool_response>[1] "
        f"nothing</tool_response><think>\nred\n</think><answer>{letter}</answer>"
    )


@pytest.mark.parametrize(
    ("text", "calls", "answer", "expected"),
    [
        (
            "Just answering.\n</think>\n<answer>A</answer>",
            None,
            "A",
            0.0,
        ),  # no parseable call, even if right
        (TOOLS, 0, "A", 0.1),  # parseable call, nothing executed, no answer
        (graded("B"), 2, "A", 0.3),  # executed, wrong
        (graded("A"), 2, "A", 0.8),  # executed and right: 0.3 + 0.5
        (TOOLS + "<answer>A</answer>", 0, "A", 0.6),  # parsed, not executed, right: 0.1 + 0.5
        (graded("A"), None, "A", 0.8),  # offline: a <tool_response> in the text counts as executed
    ],
)
def test_graduated_tool_reward_levels_when_the_reward_sees_responses(
    text: str, calls: int | None, answer: str, expected: float
) -> None:
    b = compute_reward(
        text,
        task="mcq",
        answer=answer,
        weights=RewardWeights.default(tool_mode="graduated", tool_sees_responses=True),
        successful_calls=calls,
    )
    assert b.tool == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "calls", "answer", "expected"),
    [
        (TOOLS, 0, "A", 0.1),
        (graded("B"), 2, "A", 0.1),  # executed, wrong: the release never sees the execution
        (graded("A"), 2, "A", 0.6),  # executed and right: 0.1 + 0.5
        (graded("A"), None, "A", 0.6),  # offline: the <tool_response> in the text is not read
        ("Just answering.\n</think>\n<answer>A</answer>", 2, "A", 0.0),  # no parseable call
    ],
)
def test_graduated_tool_reward_as_released_never_reaches_the_executed_level(
    text: str, calls: int | None, answer: str, expected: float
) -> None:
    # release paravt/rl/workflow.py:679-682 decodes the loss-mask-1 tokens only; tool outputs
    # are appended with loss mask 0 (:647), so tool.py:25's "<tool_response>" test never holds
    b = compute_reward(text, task="mcq", answer=answer, weights=W, successful_calls=calls)
    assert b.tool == pytest.approx(expected)


def test_graduated_needs_only_positive_accuracy() -> None:
    s = format_stats("<think>look here</think>" + render_crop_call(0, 5))
    kw = {"mode": "graduated", "bonus": 0.1, "successful_calls": 1}
    assert tool_reward(s, **kw, acc=0.2, rules="paravt") == pytest.approx(0.8)
    assert tool_reward(s, **kw, acc=0.0, rules="paravt") == pytest.approx(0.3)
    blind = {"rules": "release", "sees_responses": False}
    assert tool_reward(s, **kw, acc=0.2, **blind) == pytest.approx(0.6)
    assert tool_reward(s, **kw, acc=0.0, **blind) == pytest.approx(0.1)


def test_tool_turn_gets_think_first_and_parse_bonus() -> None:
    b = compute_reward(TOOLS, task="mcq", answer="A", weights=W)
    # base: think 0.2 + think_first 0.3 + balanced 0.1 = 0.6; anchor: closed 0.4 (no answer: no
    # flow)
    assert (b.format_base, b.anchor, b.tool, b.n_calls) == (
        pytest.approx(0.6),
        pytest.approx(0.4),
        0.1,
        2,
    )
    assert b.reward == pytest.approx(0 + 0.6 + 0.5 * 0.4 + 0.1 - 0.2)


def test_without_the_prefix_the_unopened_think_earns_no_anchor() -> None:
    b = compute_reward(GOOD, task="mcq", answer="A", weights=W, prefix="")
    # no <think>: base = answer 0.3 + /answer 0.2 + balanced? no (</think> alone) = 0.5; anchor 0
    assert (b.format_base, b.anchor, b.closed_think) == (pytest.approx(0.5), 0.0, False)


def test_anchor_switch_off_zeroes_the_anchor() -> None:
    b = compute_reward(
        "never closed", task="mcq", answer="A", weights=RewardWeights.default(anchor_enabled=False)
    )
    assert b.anchor == 0.0 and b.format == pytest.approx(0.2)  # think content >= 10 chars only


def test_accumulative_tool_reward_counts_successful_calls_only_when_correct() -> None:
    w = RewardWeights.default(tool_mode="accumulative")
    text = TOOLS + "<tool_response>x</tool_response><think>\nred\n</think><answer>A</answer>"
    right = compute_reward(text, task="mcq", answer="A", weights=w, successful_calls=3)
    wrong = compute_reward(text, task="mcq", answer="B", weights=w, successful_calls=3)
    fallback = compute_reward(text, task="mcq", answer="A", weights=w)
    assert (
        right.tool == pytest.approx(0.3)
        and wrong.tool == 0.0
        and fallback.tool == pytest.approx(0.2)
    )
    off = compute_reward(
        text, task="mcq", answer="A", weights=RewardWeights.default(tool_mode="off")
    )
    assert off.tool == 0.0


def test_accumulative_threshold_for_grounding_is_iou_half() -> None:
    s = format_stats("<think>x</think>" + render_crop_call(0, 5))
    assert tool_reward(
        s, mode="accumulative", bonus=0.1, successful_calls=2, acc=0.5, rules="release"
    ) == pytest.approx(0.2)
    assert (
        tool_reward(s, mode="accumulative", bonus=0.1, successful_calls=2, acc=0.4, rules="release")
        == 0.0
    )
    w = RewardWeights.default(tool_mode="accumulative")
    half = compute_reward(
        TOOLS + "<answer>[0, 10]</answer>", task="tvg", answer="[0, 20]", weights=w
    )
    assert half.acc == 0.5 and half.tool == pytest.approx(0.2)


def test_degenerate_output_earns_nothing_but_keeps_the_bias() -> None:
    b = compute_reward(GOOD + "<|im_start|>" * 5, task="mcq", answer="A", weights=W)
    assert b.degenerate and (b.acc, b.format, b.format_base, b.anchor, b.tool) == (0, 0, 0, 0, 0)
    assert b.reward == -0.2 and b.bias == -0.2 and b.answer == "A"


def test_acc_override_replaces_the_accuracy() -> None:
    b = compute_reward(GOOD, task="oe", answer="something else", weights=W, acc_override=0.5)
    assert b.acc == 0.5 and b.reward == pytest.approx(0.5 + 1.0 - 0.2)


def test_empty_think_and_empty_call_earn_no_ordering_or_anchor() -> None:
    # found by the differential run against the authors' reward (both exploits of a forced prefix)
    empty_think = compute_reward(
        "</think>" + render_crop_call(0, 5), task="mcq", answer="A", weights=OURS
    )
    # <think></think>: no think credit, no think_first, no alpha; the call still parses; balanced
    # 0.1
    assert (empty_think.format_base, empty_think.anchor) == (pytest.approx(0.1), 0.0)
    # release: the same, and the balance bonus is paid only to a score already > 0
    # (release format.py:120): 0
    released = compute_reward(
        "</think>" + render_crop_call(0, 5), task="mcq", answer="A", weights=W
    )
    assert (released.format_base, released.anchor) == (0.0, 0.0)
    empty_call = compute_reward(
        "A reasonable thought here.</think><tool_call></tool_call><answer>B</answer>",
        task="mcq",
        answer="A",
        weights=W,
    )
    # think 0.2 + answer 0.3 + 0.2 + balanced 0.1 = 0.8: the empty call buys no think_first
    assert empty_call.format_base == pytest.approx(0.8)


def test_text_without_any_tag_is_not_balanced() -> None:
    assert compute_reward("just B", task="mcq", answer="B", weights=W, prefix="").format_base == 0.0
