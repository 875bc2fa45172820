"""The verl reward entry scores a decoded response with our composite reward."""

from __future__ import annotations

import pytest

from paravt.integrations.verl.reward import compute_score
from paravt.protocol.tags import THINK_PREFIX
from paravt.rewards import RewardWeights, compute_reward

RESPONSE = "the flash in the middle is blue\n</think>\n<answer>{}</answer>"


def test_correct_and_wrong_letter_differ_by_exactly_the_accuracy_reward() -> None:
    info = {"task": "mcq", "options": ["A. red", "B. blue"]}
    right = compute_score("paravt", RESPONSE.format("B"), "B", info)
    wrong = compute_score("paravt", RESPONSE.format("A"), "B", info)
    assert (right["acc"], wrong["acc"]) == (1.0, 0.0)
    assert right["score"] - wrong["score"] == pytest.approx(1.0)  # same format, only R_acc differs


def test_temporal_grounding_scores_iou() -> None:
    # gt [12, 18], pred [12, 15]: overlap 3 s, union 6 s -> IoU 0.5
    out = compute_score("paravt", RESPONSE.format("[12, 15]"), "[12.0, 18.0]", {"task": "tvg"})
    assert out["acc"] == pytest.approx(0.5)


def test_forced_think_prefix_is_prepended_like_the_episode_does() -> None:
    text = RESPONSE.format("B")
    ours = compute_reward(
        THINK_PREFIX + text,
        task="mcq",
        answer="B",
        options=None,
        prefix="",
        weights=RewardWeights.default(),
    )
    assert compute_score("paravt", text, "B", {"task": "mcq"})["score"] == pytest.approx(
        ours.reward
    )
    assert ours.anchor > 0  # the opened-and-closed think earns the anchor bonus


def test_reward_weights_come_from_extra_info() -> None:
    base = compute_score("paravt", RESPONSE.format("B"), "B", {"task": "mcq"})
    shifted = compute_score(
        "paravt", RESPONSE.format("B"), "B", {"task": "mcq", "reward": {"bias": 0.0}}
    )
    assert shifted["score"] - base["score"] == pytest.approx(0.2)  # default bias is -0.2


def test_prefix_follows_the_runs_think_prefix_and_is_never_doubled() -> None:
    text = RESPONSE.format("B")
    forced = compute_score("paravt", text, "B", {"task": "mcq", "think_prefix": True})
    unforced = compute_score("paravt", text, "B", {"task": "mcq", "think_prefix": False})
    written = compute_score(
        "paravt", THINK_PREFIX + text, "B", {"task": "mcq", "think_prefix": True}
    )
    assert (
        forced["anchor"] == pytest.approx(0.7) and unforced["anchor"] == 0.0
    )  # no <think> was forced
    # a response that already opens <think> gets no second one; f_tau reads the response as the
    # model wrote it (its own <think> counts there, a forced one does not)
    assert written.pop("format_generated") == 1.0 and forced.pop("format_generated") == 0.5
    assert written == forced
    assert forced["format_ref"] == pytest.approx(
        forced["format"]
    )  # default weights: the yardstick agrees


def test_verl_rows_carry_the_runs_think_prefix(tmp_path) -> None:
    from types import SimpleNamespace

    from paravt.integrations.verl.data import verl_record

    extra = SimpleNamespace(
        id="q1",
        question="What flashes?",
        task="mcq",
        answer="B",
        options=("red", "blue"),
        nframes=8,
        subset="s",
        duration=60.0,
        tool_necessary_at_n={8: True},
    )
    row = SimpleNamespace(id="q1", videos=["v.mp4"], extra_info=extra)
    on, off = (
        verl_record(row, tmp_path, 0, "paravt_agent", flag)["extra_info"] for flag in (True, False)
    )
    assert (on["think_prefix"], off["think_prefix"]) == (True, False)
    text = RESPONSE.format("B")
    assert (
        compute_score("paravt", text, "B", off)["anchor"]
        == 0.0
        < compute_score("paravt", text, "B", on)["anchor"]
    )
