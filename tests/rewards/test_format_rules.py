"""The two switches of issue 46 items 2 and 9, worked by hand on broken outputs under both settings:
``reward.format_rules`` (release = the authors' format.py, the default; paravt = our next-tag rules)
and ``reward.tool_sees_responses`` (off = the release's R_tool, the default).

Every text is scored as written (``prefix=""``), with the PARA-GRPO weights (answer suffix, the
anchor at lambda 0.5 inside the 1.0 cap, ``<tool_code>`` credited). "release" cites the authors'
release at cf55249: ``format.py`` / ``utils.py`` / ``tool.py`` under paravt/rl/rewards/ and
paravt/rl/workflow.py, by line.
"""

import pytest

from paravt.protocol.tags import TURN_SEPARATOR, render_crop_call
from paravt.rewards import RewardBreakdown, RewardWeights, compute_reward

RELEASE = RewardWeights.default()
OURS = RewardWeights.default(format_rules="paravt", tool_sees_responses=True)
OPTIONS = ["red", "blue", "green", "yellow"]
CALL = render_crop_call(0, 30)  # a closed <tool_call> with a JSON object that has a "name"
UNCLOSED_JSON = CALL.removesuffix("</tool_call>")  # the same block, never closed


def score(text: str, w: RewardWeights, calls: int | None = None) -> RewardBreakdown:
    return compute_reward(
        text,
        task="mcq",
        answer="A",
        options=OPTIONS,
        prefix="",
        weights=w,
        successful_calls=calls,
    )


def fmt(b: RewardBreakdown) -> tuple[float, float, float]:
    return (round(b.format_base, 6), round(b.anchor, 6), round(b.format, 6))


def test_defaults_are_the_releases() -> None:
    assert (RELEASE.format_rules, RELEASE.tool_sees_responses) == ("release", False)


def test_unclosed_think() -> None:
    text = "<think>\nThe flash looks red so the answer is A"
    # release: think content runs to the end (utils.py:12, 95) >= 10: +0.2 (format.py:83-84);
    # no </think> anywhere: -gamma (format.py:113-114), 0.5 * -0.3; score 0.05 > 0 but the counts
    # differ (think 1 / 0, format.py:120-121): no balance. R_fmt 0.05
    assert fmt(score(text, RELEASE)) == (0.2, -0.3, 0.05)
    # ours: the same numbers (think content to the end; the last <think> is unclosed)
    assert fmt(score(text, OURS)) == (0.2, -0.3, 0.05)


def test_a_second_think_left_open() -> None:
    text = "<think>\nFirst the opening scene.\n</think>\n<think>\nNow I wonder about"
    # release: a </think> exists, so no gamma (format.py:113); alpha 0.4 (format.py:104-105);
    # think 0.2; counts 2 / 1: no balance. 0.2 + 0.5 * 0.4 = 0.4
    assert fmt(score(text, RELEASE)) == (0.2, 0.4, 0.4)
    # ours: gamma on the LAST <think>: anchor 0.4 - 0.3 = 0.1; R_fmt 0.2 + 0.05 = 0.25
    assert fmt(score(text, OURS)) == (0.2, 0.1, 0.25)


def test_unclosed_answer_the_issues_first_example() -> None:
    text = "<think>\nThe flash is red at 12 s.\n</think>\n<answer>A"
    r, o = score(text, RELEASE), score(text, OURS)
    # release: answer credit needs a closed, non-empty pair (format.py:28-36, 85-89): none;
    # think 0.2, alpha 0.4, no flow (format.py:106-112); answer counts 1 / 0: no balance.
    # R_fmt 0.2 + 0.2 = 0.4
    assert fmt(r) == (0.2, 0.4, 0.4)
    # ours: <answer> present and filled +0.3, not closed: R_fmt 0.5 + 0.2 = 0.7
    assert fmt(o) == (0.5, 0.4, 0.7)
    # the answer is still read ("A"): R = 1 + R_fmt - 0.2
    assert (r.acc, r.reward, o.reward) == (1.0, pytest.approx(1.2), pytest.approx(1.5))


def test_empty_answer() -> None:
    text = "<think>\nI cannot tell from the overview.\n</think>\n<answer> </answer>"
    # both: no answer credit for a blank body (format.py:33-35), no flow; think 0.2, alpha 0.4,
    # balance 0.1 (counts equal, score 0.4 > 0). R_fmt 0.3 + 0.2 = 0.5
    assert fmt(score(text, RELEASE)) == fmt(score(text, OURS)) == (0.3, 0.4, 0.5)


def test_an_empty_answer_after_a_filled_one() -> None:
    text = "<think>\nThe flash is red at 12 s.\n</think>\n<answer>A</answer><answer></answer>"
    # release: ANY closed pair with text earns the answer credit (format.py:33-35): 0.2 + 0.5
    # + balance 0.1 = 0.8; alpha 0.4 + beta 0.3 (format.py:106-112); min(0.8 + 0.35, 1) = 1.0
    assert fmt(score(text, RELEASE)) == (0.8, 0.7, 1.0)
    # ours: the LAST answer is empty: think 0.2 + balanced 0.1; alpha only: 0.3 + 0.2 = 0.5
    assert fmt(score(text, OURS)) == (0.3, 0.4, 0.5)


def test_balance_alone_earns_nothing_under_the_release() -> None:
    text = "<think>\nok\n</think>\n<answer></answer>"
    # release: a 2-char think earns nothing and gates alpha (utils.py:93-98); no answer credit;
    # the score is 0, so the balance bonus is not paid (format.py:120: score > 0)
    assert fmt(score(text, RELEASE)) == (0.0, 0.0, 0.0)
    # ours: balanced alternation pays 0.1 whatever else the text earned
    assert fmt(score(text, OURS)) == (0.1, 0.0, 0.1)


def test_a_call_inside_an_unclosed_think_the_issues_second_example() -> None:
    # turn 1 calls inside a think it never closes; turn 2 answers (the tool response is prompt)
    text = "<think>\nI should look at the start.\n" + CALL + TURN_SEPARATOR + "<answer>A</answer>"
    r, o = score(text, RELEASE, calls=1), score(text, OURS, calls=1)
    # release: think content up to "<tool_" 0.2 (utils.py:12); answer 0.3 + 0.2; ordering 0.3: a
    # <think> opens before the first tool tag (utils.py:101-110) and the call parses
    # (utils.py:71-78) (format.py:117-118); gamma: no </think> (format.py:113) -0.15; think
    # counts 1 / 0: no balance. R_fmt = 1.0 - 0.15 = 0.85
    assert fmt(r) == (1.0, -0.3, 0.85)
    # ours: the ordering term needs a CLOSED think before the call: 0.7 - 0.15 = 0.55
    assert fmt(o) == (0.7, -0.3, 0.55)
    # R_tool: the release 0.1 + 0.5 (it never sees the call executed); ours 0.3 + 0.5
    assert (r.tool, o.tool) == (pytest.approx(0.6), pytest.approx(0.8))
    assert (r.reward, o.reward) == (pytest.approx(1 + 0.85 + 0.6 - 0.2), pytest.approx(2.15))


def test_a_tool_code_call_in_an_unclosed_think() -> None:
    text = "<think>\nLooking at the video now.\n<tool_code>\ncrop_video(80, 150)\n</tool_code>"
    # release: a <tool_code> line with "(" is a parseable call (utils.py:82-89): think 0.2 +
    # ordering 0.3; gamma -0.15; think counts 1 / 0: no balance. 0.5 - 0.15 = 0.35; R_tool 0.1
    r = score(text, RELEASE, calls=0)
    assert fmt(r) == (0.5, -0.3, 0.35) and r.tool == pytest.approx(0.1)
    # ours: no closed think before the call: 0.2 - 0.15 = 0.05; R_tool 0.1 (credited as released)
    o = score(text, OURS, calls=0)
    assert fmt(o) == (0.2, -0.3, 0.05) and o.tool == pytest.approx(0.1)
    # credit_tool_code off: not a call under either rules: no ordering, no R_tool
    for rules in ("release", "paravt"):
        w = RewardWeights.default(format_rules=rules, credit_tool_code=False)
        b = score(text, w, calls=0)
        assert fmt(b) == (0.2, -0.3, 0.05) and b.tool == 0.0 and b.n_parseable == 0


def test_a_python_style_tool_call() -> None:
    text = "<think>\nCheck the first half.\n</think>\n<tool_call>\ncrop_video(0, 30)\n</tool_call>"
    # both: a python-style body is not JSON (utils.py:75-80): no ordering, no R_tool; think 0.2,
    # alpha 0.4, balance 0.1 (counts equal). R_fmt 0.3 + 0.2 = 0.5
    for w in (RELEASE, OURS):
        b = score(text, w, calls=0)
        assert fmt(b) == (0.3, 0.4, 0.5) and b.tool == 0.0 and b.n_parseable == 0


def test_a_trailing_unclosed_json_block() -> None:
    text = "<think>\nCheck the first half.\n</think>\n" + UNCLOSED_JSON
    # release: the block's body runs to the end of the text (utils.py:8, "|$") and parses: a call.
    # think 0.2 + ordering 0.3; alpha 0.4; tool_call counts 1 / 0: no balance. 0.5 + 0.2 = 0.7;
    # R_tool 0.1
    r = score(text, RELEASE, calls=1)
    assert fmt(r) == (0.5, 0.4, 0.7) and r.tool == pytest.approx(0.1) and r.n_parseable == 1
    # ours: only a closed block parses: think 0.2, alpha 0.4: 0.4; no R_tool
    o = score(text, OURS, calls=1)
    assert fmt(o) == (0.2, 0.4, 0.4) and o.tool == 0.0 and o.n_parseable == 0
    # once another turn follows, the release reads the block to the end of the text, through the
    # turn's <|im_end|>: not JSON, not a call (think 0.2 + answer 0.5; alpha + beta 0.35)
    later = score(text + TURN_SEPARATOR + "<answer>A</answer>", RELEASE, calls=1)
    assert fmt(later) == (0.7, 0.7, 1.0) and later.tool == 0.0 and later.n_parseable == 0


def test_turn_ends_as_the_releases_training_text_holds_them() -> None:
    # The release's reward reads each turn's sampled tokens (workflow.py:545 appends
    # resp.output_tokens, :679-682 decodes the loss-mask-1 ones): a turn that stopped at its end
    # token ends with <|im_end|>, a length-cut turn with nothing. Ours, given that same text, reads
    # it as the release does (our episodes end turns differently: docs/rewards.md, "as it runs").
    think = "<think>\nCheck the first half.\n</think>\n"
    stopped = score(think + UNCLOSED_JSON + "<|im_end|>", RELEASE, calls=1)
    # the unclosed block's body runs to the end (utils.py:8) through "<|im_end|>": not JSON
    # (utils.py:75-80): think 0.2, alpha 0.4, counts 1 / 0: no balance. 0.2 + 0.2 = 0.4; R_tool 0
    assert fmt(stopped) == (0.2, 0.4, 0.4) and stopped.tool == 0.0 and stopped.n_parseable == 0
    # a turn cut after "<tool_call>\n", the next one writing the JSON and the close: one block,
    # a call (utils.py:71-78). think 0.2 + answer 0.5 + ordering 0.3 + balance 0.1 (counts 1 / 1
    # each) = 1.1; alpha + beta 0.35; min(1.45, 1) = 1.0. R_tool 0.1 + 0.5 (right answer) = 0.6
    cut = think + "<tool_call>\n" + CALL.removeprefix("<tool_call>\n") + "\n<answer>A</answer>"
    b = score(cut + "<|im_end|>", RELEASE, calls=1)
    assert fmt(b) == (1.0, 0.7, 1.0) and b.tool == pytest.approx(0.6) and b.n_parseable == 1


def test_a_completion_ending_in_its_stop_token_is_a_stopped_turn() -> None:
    """Our episode text drops each turn's stop token; ``episode_reward`` appends <|im_end|> when the
    last turn stopped at it (as the release's decoded text holds it), so a stopped turn's trailing
    unclosed block scores as the release's training text does (0.4, R_tool 0: the test above) and
    a cut one as a call (0.7, R_tool 0.1); the other terms read the text without the token."""
    text = "<think>\nCheck the first half.\n</think>\n" + UNCLOSED_JSON
    stopped, cut = score(text + "<|im_end|>", RELEASE, calls=0), score(text, RELEASE, calls=0)
    assert fmt(stopped) == (0.2, 0.4, 0.4) and stopped.tool == 0.0 and stopped.n_parseable == 0
    assert fmt(cut) == (0.5, 0.4, 0.7) and cut.tool == pytest.approx(0.1)
    # the generated-text format (f_tau) reads it the same way
    assert stopped.format_generated == pytest.approx(0.4) and cut.format_generated == 0.7
    # our own rules never counted an unclosed block, and the answer is read without the token
    assert fmt(score(text + "<|im_end|>", OURS)) == fmt(score(text, OURS)) == (0.2, 0.4, 0.4)
    done = "<think>\nCheck it.\n</think>\n<answer>A</answer><|im_end|>"
    assert score(done, RELEASE).answer == "A" and score(done, OURS).acc == 1.0


def test_an_answer_before_the_think_has_no_flow() -> None:
    text = "<answer>A</answer><think>\nThe flash is red at 12 s.\n</think>"
    # the release pays beta for </think> and a filled pair anywhere (format.py:106-112); the paper's
    # flow is think -> /think -> answer, so ours (both rules) pays no beta here: think 0.2 +
    # answer 0.5 + balance 0.1; alpha 0.4. min(0.8 + 0.2, 1) = 1.0
    assert fmt(score(text, RELEASE)) == (0.8, 0.4, 1.0)


def test_tool_sees_responses_reads_the_executed_calls() -> None:
    text = (
        "<think>\nCheck the first half.\n</think>\n" + CALL + TURN_SEPARATOR + "<answer>B</answer>"
    )
    # the release (tool.py:24-28 on workflow.py:679-682's mask-1 text): 0.1, wrong answer
    assert score(text, RELEASE, calls=1).tool == pytest.approx(0.1)
    seen = RewardWeights.default(tool_sees_responses=True)
    assert score(text, seen, calls=1).tool == pytest.approx(0.3)  # executed, wrong
    assert score(text, seen, calls=0).tool == pytest.approx(0.1)  # nothing ran
