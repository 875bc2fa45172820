"""The RL init's selection key (issue 47, M2): a checkpoint that never writes <answer> cannot win
under ``closed/all``, although it wins under ``f_tau`` (the release's format reward caps at 1.0
without an answer)."""

from __future__ import annotations

import pytest

from paravt.repro.select import pick_early
from paravt.rewards import RewardWeights, compute_reward
from paravt.rewards.metrics import RolloutRecord, aggregate

THINK = "<think>\nThe flash is brief; I should look at the windows closely.\n</think>\n"
CALL = '<tool_call>\n{"name": "crop_video", "arguments": {"start": 0, "end": 30}}\n</tool_call>'


def _metrics(completions: list[str]) -> dict[str, float]:
    w = RewardWeights.default()
    recs = [
        RolloutRecord(
            compute_reward(
                c, task="mcq", answer="A", options=["red", "blue"], weights=w, prefix=""
            ),
            task="mcq",
        )
        for c in completions
    ]
    return aggregate(recs)


def test_closed_all_counts_only_rollouts_with_a_closed_answer() -> None:
    m = _metrics(
        [
            THINK + CALL,  # calls, never answers: not well-formed
            THINK + "<answer>A</answer>",  # well-formed, no call
            THINK + CALL + "\n<answer>A</answer>",  # well-formed, with a parseable call
            THINK + "<tool_call>\n{not json\n</tool_call>\n<answer>A</answer>",  # broken call
        ]
    )
    assert m["closed/all"] == pytest.approx(2 / 4)


def test_a_checkpoint_that_never_answers_cannot_win() -> None:
    never = _metrics([THINK + CALL] * 4)  # the 2026-11-29 step-25 shape: calls, no <answer>
    # a later checkpoint answers in half its rollouts; the other half run on in an unclosed think
    # (the 2026-11-29 steps 100–150: think closed in ~70 %, answers in 33–62 %)
    overrun = "<think>\nThe overview shows grey frames, then more grey frames, then"
    answers = _metrics([THINK + CALL + "\n<answer>A</answer>"] * 2 + [overrun] * 2)
    assert never["closed/all"] == 0.0 and answers["closed/all"] == pytest.approx(0.5)
    # under f_tau the early, never-answering checkpoint is within tolerance of the best and wins
    assert never["f_tau"] > answers["f_tau"] + 0.05
    f_scores = [(25, never["f_tau"]), (100, answers["f_tau"])]
    assert pick_early(f_scores, tolerance=0.05) == 25
    assert (
        pick_early([(25, never["closed/all"]), (100, answers["closed/all"])], tolerance=0.05) == 100
    )
