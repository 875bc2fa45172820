"""Reward by path (issue 47, M3): each path classified, shares, means and the GRPO advantage by
path computed by hand on hand-made rollouts."""

from __future__ import annotations

import math

import pytest

from paravt.repro.paths import (
    PathRow,
    path_table,
    predicted_sign,
    unpaired_bootstrap_diff,
)
from paravt.rewards.metrics import classify_path, path_shares


@pytest.mark.parametrize(
    ("executed", "written", "tool_code", "answered", "path"),
    [
        (2, 2, False, True, "executed"),  # two calls ran, answered
        (1, 3, False, False, "executed"),  # one of three ran, no answer: still a call that ran
        (0, 1, False, True, "written_not_run"),  # malformed JSON, answered anyway
        (0, 0, True, False, "written_not_run"),  # a <tool_code> reversion that did not run
        (0, 0, False, True, "direct"),
        (0, 0, False, False, "broken"),
    ],
)
def test_each_path_is_classified(
    executed: int, written: int, tool_code: bool, answered: bool, path: str
) -> None:
    got = classify_path(
        executed_calls=executed, written_calls=written, tool_code=tool_code, answered=answered
    )
    assert got == path


def _rows() -> list[PathRow]:
    # Two prompt groups of 4. Group "a": rewards 2.0 (executed, right), 1.0 (direct, right),
    # 0.0 (direct, wrong), -0.2 (broken). Group "b": 1.2 (executed, wrong), 1.2 (executed, wrong),
    # 0.4 (written_not_run, wrong), 0.4 (direct, wrong).
    return [
        PathRow("executed", "a", 1.0, 2.0),
        PathRow("direct", "a", 1.0, 1.0),
        PathRow("direct", "a", 0.0, 0.0),
        PathRow("broken", "a", 0.0, -0.2),
        PathRow("executed", "b", 0.0, 1.2),
        PathRow("executed", "b", 0.0, 1.2),
        PathRow("written_not_run", "b", 0.0, 0.4),
        PathRow("direct", "b", 0.0, 0.4),
    ]


def _z(values: list[float]) -> list[float]:
    m = sum(values) / len(values)
    s = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))
    return [(v - m) / (s + 1e-6) for v in values]


def test_shares_accuracy_and_reward_by_path_by_hand() -> None:
    t = path_table(_rows(), seed=3)
    p = t["paths"]
    assert t["n"] == 8
    assert [p[k]["n"] for k in ("executed", "written_not_run", "direct", "broken")] == [3, 1, 3, 1]
    assert p["executed"]["share"] == pytest.approx(3 / 8)
    assert p["executed"]["acc"]["mean"] == pytest.approx(1 / 3)
    assert p["executed"]["reward"]["mean"] == pytest.approx((2.0 + 1.2 + 1.2) / 3)
    assert p["direct"]["reward"]["mean"] == pytest.approx((1.0 + 0.0 + 0.4) / 3)
    assert p["broken"]["reward"]["mean"] == pytest.approx(-0.2)
    # the contrasts: 4.4/3 − 1.4/3 = 1.0; breaks: 1 of 4 attempted calls, 1 of 4 non-call rollouts
    assert t["call_minus_direct"]["reward"]["mean"] == pytest.approx(1.0)
    assert t["call_break_rate"] == pytest.approx(1 / 4)
    assert t["direct_break_rate"] == pytest.approx(1 / 4)
    # the decision: wrote a call (2.0, 1.2, 1.2, 0.4) minus wrote none (1.0, 0.0, -0.2, 0.4)
    assert t["attempt_minus_skip"]["reward"]["mean"] == pytest.approx(4.8 / 4 - 1.2 / 4)


def test_a_call_path_that_out_earns_direct_answers_while_the_decision_does_not_pay() -> None:
    # one group of 8: executed calls earn 1.5, but 3 of 5 attempted calls break (0.0); the three
    # direct answers earn 1.0. Executed beats direct; attempting a call (mean 0.6) loses to 1.0.
    rows = [PathRow("executed", "g", 1.0, 1.5)] * 2
    rows += [PathRow("written_not_run", "g", 0.0, 0.0)] * 3
    rows += [PathRow("direct", "g", 1.0, 1.0)] * 3
    t = path_table(rows)
    assert t["call_minus_direct"]["reward"]["mean"] == pytest.approx(0.5)
    assert t["attempt_minus_skip"]["reward"]["mean"] == pytest.approx(0.6 - 1.0)
    z = _z([1.5, 1.5, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    assert t["attempt_minus_skip"]["advantage"]["mean"] == pytest.approx(
        sum(z[:5]) / 5 - sum(z[5:]) / 3, abs=1e-6
    )
    assert (
        t["attempt_minus_skip"]["advantage"]["mean"]
        < 0
        < t["call_minus_direct"]["advantage"]["mean"]
    )


def test_advantage_by_path_is_the_group_normalised_reward() -> None:
    za = _z([2.0, 1.0, 0.0, -0.2])
    zb = _z([1.2, 1.2, 0.4, 0.4])
    t = path_table(_rows())
    p = t["paths"]
    assert p["executed"]["advantage"]["mean"] == pytest.approx((za[0] + zb[0] + zb[1]) / 3)
    assert p["direct"]["advantage"]["mean"] == pytest.approx((za[1] + za[2] + zb[3]) / 3)
    assert p["written_not_run"]["advantage"]["mean"] == pytest.approx(zb[2])
    want = (za[0] + zb[0] + zb[1]) / 3 - (za[1] + za[2] + zb[3]) / 3
    assert t["call_minus_direct"]["advantage"]["mean"] == pytest.approx(want)


def test_a_path_with_no_rollouts_has_no_interval_and_no_contrast() -> None:
    rows = [PathRow("direct", "g", 1.0, 1.0), PathRow("broken", "g", 0.0, -0.2)]
    t = path_table(rows)
    assert t["paths"]["executed"] == {
        "n": 0,
        "share": 0.0,
        "acc": None,
        "reward": None,
        "advantage": None,
    }
    assert t["call_minus_direct"] == {"reward": None, "advantage": None}
    assert t["attempt_minus_skip"] == {"reward": None, "advantage": None}  # no call written
    assert t["call_break_rate"] is None and t["direct_break_rate"] == pytest.approx(0.5)
    assert predicted_sign(t) is None
    empty = {"n": 0, "paths": {}, "call_minus_direct": None, "attempt_minus_skip": None}
    assert path_table([]) == empty


def test_predicted_sign_follows_the_advantage_interval() -> None:
    # calls always win their group: the advantage gap is positive with an interval above 0
    up = [PathRow("executed", g, 1.0, 2.0) for g in range(20)] + [
        PathRow("direct", g, 0.0, 0.5) for g in range(20)
    ]
    assert predicted_sign(path_table(up)) == 1
    down = [PathRow("executed", g, 0.0, 0.1) for g in range(20)] + [
        PathRow("direct", g, 1.0, 1.5) for g in range(20)
    ]
    assert predicted_sign(path_table(down)) == -1
    # the same reward on both paths inside every group: every advantage is 0, the gap straddles 0
    tie = [PathRow("executed", g, 1.0, 1.0) for g in range(10)] + [
        PathRow("direct", g, 1.0, 1.0) for g in range(10)
    ]
    assert predicted_sign(path_table(tie)) == 0
    # calls that RUN win, but most calls break: the decision to call loses (Format Fragility)
    fragile = [PathRow("executed", g, 1.0, 2.0) for g in range(20)]
    fragile += [PathRow("written_not_run", g, 0.0, 0.0) for g in range(20) for _ in range(3)]
    fragile += [PathRow("direct", g, 1.0, 1.5) for g in range(20) for _ in range(2)]
    t = path_table(fragile)
    assert t["call_minus_direct"]["advantage"]["lo"] > 0 and predicted_sign(t) == -1


def test_unpaired_bootstrap_brackets_the_difference_and_is_seeded() -> None:
    a, b = [1.0, 2.0, 3.0, 4.0], [0.0, 1.0]
    d = unpaired_bootstrap_diff(a, b, seed=7)
    assert d is not None and d.mean == pytest.approx(2.0) and d.n == 2
    assert d.lo is not None and d.hi is not None and d.lo <= 2.0 <= d.hi
    assert unpaired_bootstrap_diff(a, b, seed=7) == d
    assert unpaired_bootstrap_diff([], b) is None


def test_path_shares_cover_every_path() -> None:
    s = path_shares(["executed", "executed", "direct", "broken"])
    assert s == {"executed": 0.5, "written_not_run": 0.0, "direct": 0.25, "broken": 0.25}
    assert path_shares([]) == dict.fromkeys(s, 0.0)


def test_every_rl_step_logs_the_path_shares() -> None:
    """``aggregate`` (what the trainer logs each step) carries ``path/<name>``, from the executed
    calls and the reward's view of the text."""
    from paravt.rewards import RewardWeights, compute_reward
    from paravt.rewards.metrics import RolloutRecord, aggregate

    think = "<think>\nI should check the windows one by one.\n</think>\n"
    call = '<tool_call>\n{"name": "crop_video", "arguments": {"start": 0, "end": 9}}\n</tool_call>'
    w = RewardWeights.default()

    def rec(text: str, executed: int) -> RolloutRecord:
        b = compute_reward(text, task="mcq", answer="A", options=["x", "y"], weights=w, prefix="")
        return RolloutRecord(b, task="mcq", executed_calls=executed)

    m = aggregate(
        [
            rec(think + call, 1),  # executed
            rec(think + "<tool_call>\ncrop_video(0, 9)\n</tool_call>", 0),  # written, not run
            rec(think + "<tool_code>\ncrop_video(0, 9)\n</tool_code>", 0),  # written, not run
            rec(think + "<answer>A</answer>", 0),  # direct
        ]
    )
    assert [m[f"path/{p}"] for p in ("executed", "written_not_run", "direct")] == [0.25, 0.5, 0.25]
    assert m["path/broken"] == 0.0


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("<think>\nlooking\n</think>\n<answer>B</answer>", 1),
        ("<think>\nlooking\n</think>\n<answer></answer>", 0),  # empty: no answer, no fall-through
        ("<think>\nlooking\n</think>\nThe answer is B.", 2),
        ("<think>\nlooking at grey frames, then more grey", 3),  # a think that never closed
        ("", 0),
    ],
)
def test_answer_level_says_which_extraction_found_the_answer(text: str, level: int) -> None:
    from paravt.protocol.answer import answer_level

    assert answer_level(text) == level


def test_a_think_that_never_closed_is_broken_though_the_reward_reads_its_last_line() -> None:
    from paravt.rewards import RewardWeights, compute_reward
    from paravt.rewards.metrics import RolloutRecord

    w = RewardWeights.default()
    overrun = "<think>\nThe frames are grey, then grey again, then"
    b = compute_reward(overrun, task="mcq", answer="A", options=["x", "y"], weights=w, prefix="")
    assert b.answer is not None and not b.finished
    assert RolloutRecord(b, task="mcq", executed_calls=0).path == "broken"
    done = "<think>\nThe frames are grey.\n</think>\nA"
    d = compute_reward(done, task="mcq", answer="A", options=["x", "y"], weights=w, prefix="")
    assert d.finished and RolloutRecord(d, task="mcq", executed_calls=0).path == "direct"


def test_the_probe_scores_advantages_as_the_trainer_does_clip_included() -> None:
    """With the release's clip (±20 on 10 × (r + bias)), a right answer with a call (2.6) and one
    without (2.2) score the same: the call's premium is gone from the advantage."""
    from paravt.config import TrainConfig
    from paravt.repro.path_probe import trainer_advantages

    rows = [
        PathRow("executed", 0, 1.0, 2.6),
        PathRow("direct", 0, 1.0, 2.2),
        PathRow("broken", 0, 0.0, -0.2),
        PathRow("broken", 0, 0.0, -0.2),
    ]
    cfg = TrainConfig()
    clipped = path_table(rows, advantages=trainer_advantages(cfg))
    assert clipped["call_minus_direct"]["advantage"]["mean"] == pytest.approx(0.0, abs=1e-9)
    cfg.rl.reward_clip = None
    free = path_table(rows, advantages=trainer_advantages(cfg))
    z = _z([26.0, 22.0, -2.0, -2.0])
    assert free["call_minus_direct"]["advantage"]["mean"] == pytest.approx(z[0] - z[1])
