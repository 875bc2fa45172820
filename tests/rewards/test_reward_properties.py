"""Property tests: reward bounds, when the anchor fires, accumulative tool reward on wrong
answers."""

import math

from hypothesis import given, settings, strategies as st

from paravt.protocol import tags as T
from paravt.protocol.stats import THINK_MIN_CHARS, format_stats
from paravt.rewards import RewardWeights, compute_reward

FRAGMENTS = [
    *T.PROTOCOL_TAGS,
    T.IM_START,
    T.IM_END,
    "\n",
    '{"name": "crop_video", "arguments": {"start_time": 10, "end_time": 20}}',
    "crop_video(80, 150)",
    "{",
    "}",
    "A",
    "B",
    "(C)",
    "The answer is D",
    "[3, 7]",
    "1:20 to 2:30",
    "I look carefully",
    "视频",
    "🎬",
    "\u0000",
]
texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=10)), max_size=25).map(
    "".join
)
tasks = st.sampled_from(
    [("mcq", "B", ["a", "b", "c", "d"]), ("tvg", "[3, 8]", None), ("oe", "red cat", None)]
)
prefixes = st.sampled_from([T.THINK_PREFIX, ""])


@settings(max_examples=500, deadline=None)
@given(texts, tasks, prefixes)
def test_reward_is_finite_and_within_documented_bounds(text, task, prefix) -> None:
    kind, answer, options = task
    b = compute_reward(
        text,
        task=kind,
        answer=answer,
        options=options,
        prefix=prefix,
        weights=RewardWeights.default(),
    )
    assert all(math.isfinite(x) for x in (b.reward, b.acc, b.format, b.anchor, b.tool))
    assert 0 <= b.acc <= 1 and 0 <= b.format_base <= 1 and -0.3 <= b.anchor <= 0.7 + 1e-12
    assert -0.15 - 1e-12 <= b.format <= 1.0 + 1e-12 and -0.15 - 1e-12 <= b.format_generated <= 1
    assert -0.35 - 1e-12 <= b.reward <= 2.8 + 1e-12  # docs/rewards.md ranges
    assert b.tool in (0.0, 0.1, 0.3, 0.5, 0.6, 0.8)  # graduated levels
    if b.degenerate:
        assert b.reward == -0.2 and b.format == b.acc == b.tool == 0


@settings(max_examples=500, deadline=None)
@given(texts, prefixes)
def test_anchor_fires_only_as_defined_under_our_rules(text, prefix) -> None:
    full = prefix + text
    w = RewardWeights.default(format_rules="paravt")
    b = compute_reward(text, task="mcq", answer="B", prefix=prefix, weights=w)
    if b.degenerate:
        return
    plain = T.strip_observations(full)
    last_open = plain.rfind(T.THINK_OPEN)
    unclosed = last_open >= 0 and T.THINK_CLOSE not in plain[last_open:]
    if T.THINK_OPEN not in plain:
        assert b.anchor == 0.0
    if b.anchor > 0:
        assert T.THINK_CLOSE in plain
    if b.anchor < 0:
        assert unclosed
    # exact decomposition: alpha*closed + beta*flow - gamma*unclosed (alpha and beta only for a
    # substantive think), flow implies an answer block
    thought = format_stats(full).think_chars >= THINK_MIN_CHARS
    residual = b.anchor - 0.4 * (b.closed_think and thought) + 0.3 * unclosed
    assert math.isclose(residual, 0.0, abs_tol=1e-9) or (
        math.isclose(residual, 0.3, abs_tol=1e-9)
        and thought
        and b.closed_answer
        and T.ANSWER_OPEN in plain
    )


@settings(max_examples=500, deadline=None)
@given(texts, prefixes)
def test_anchor_fires_only_as_defined_under_the_release_rules(text, prefix) -> None:
    b = compute_reward(text, task="mcq", answer="B", prefix=prefix, weights=RewardWeights.default())
    if b.degenerate:
        return
    plain = T.strip_observations(prefix + text)
    opened = plain.find(T.THINK_OPEN)
    closed_after = opened >= 0 and T.THINK_CLOSE in plain[opened:]
    if b.anchor > 0:
        assert closed_after
    # gamma exactly when a <think> is open and no </think> is anywhere (release format.py:113)
    assert (b.anchor < 0) == (opened >= 0 and T.THINK_CLOSE not in plain)
    r = format_stats(prefix + text).release
    thought = r.think_chars >= THINK_MIN_CHARS
    residual = b.anchor - 0.4 * (closed_after and thought) + 0.3 * r.think_unclosed
    assert math.isclose(residual, 0.0, abs_tol=1e-9) or (
        math.isclose(residual, 0.3, abs_tol=1e-9) and thought and T.ANSWER_CLOSE in plain
    )


@settings(max_examples=400, deadline=None)
@given(texts, st.integers(0, 8))
def test_accumulative_tool_reward_is_zero_when_the_answer_is_wrong(text, calls) -> None:
    w = RewardWeights.default(tool_mode="accumulative")
    b = compute_reward(
        text + "<answer>Z</answer>",
        task="mcq",
        answer="B",
        options=["a", "b"],
        successful_calls=calls,
        weights=w,
    )
    if b.acc == 0.0:  # wrong (almost always: the appended answer is Z)
        assert b.tool == 0.0
    good = compute_reward(
        text + "<answer>B</answer>",
        task="mcq",
        answer="B",
        options=["a", "b"],
        successful_calls=calls,
        weights=w,
    )
    if good.acc == 1.0:  # (a preceding unclosed <tool_response> swallows the answer)
        assert math.isclose(good.tool, 0.1 * calls)
