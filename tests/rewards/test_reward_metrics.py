import pytest

from paravt.protocol.tags import render_crop_call
from paravt.rewards import RewardWeights, compute_reward
from paravt.rewards.metrics import RolloutRecord, aggregate

W = RewardWeights.default()


def rec(text: str, task: str, answer: str, n: int | None, **kw) -> RolloutRecord:
    return RolloutRecord(compute_reward(text, task=task, answer=answer, weights=W), task, n, **kw)


def test_aggregate_matches_hand_counts() -> None:
    tool = (
        "Look.\n</think>" + render_crop_call(0, 5) + render_crop_call(5, 9) + "<answer>A</answer>"
    )
    recs = [
        rec(
            "Checked it all.</think><answer>A</answer>", "mcq", "A", 4, tokens={"main": 10}
        ),  # acc 1
        rec(tool, "mcq", "B", 8, subagent_latency_s=2.0, tokens={"main": 30}),  # acc 0, 2 calls
        rec("x</think><tool_code>crop_video(1,2)</tool_code>", "oe", "cat", 8),  # acc 0
        rec("never closed: red cat", "oe", "red cat", None),  # acc 1 (F1 of last line?)
    ]
    m = aggregate(recs)
    assert (
        m["n"] == 4
        # kappa without execution records: parseable calls, the <tool_code> call credited
        and m["kappa"] == pytest.approx(3 / 4)
        and m["kappa_written"] == pytest.approx(2 / 4)  # the two <tool_call> blocks
        and m["skip_tool_rate"] == pytest.approx(2 / 4)
    )
    assert m["closed/think"] == pytest.approx(3 / 4) and m["closed/tool_call"] == pytest.approx(
        1 / 4
    )
    assert m["closed/answer"] == pytest.approx(2 / 4) and m["tool_code_rate"] == pytest.approx(
        1 / 4
    )
    acc4 = recs[
        3
    ].breakdown.acc  # last line "never closed: red cat" vs "red cat": P 2/4, R 1 -> 2/3
    assert acc4 == pytest.approx(2 / 3)
    assert m["acc/task/mcq"] == pytest.approx(0.5) and m["acc/task/oe"] == pytest.approx(acc4 / 2)
    assert m["acc/n/4"] == 1.0 and m["acc/n/8"] == 0.0 and "acc/n/None" not in m
    assert m["f_tau"] == pytest.approx(sum(r.breakdown.format_generated for r in recs) / 4)
    assert m["f_tau_ref"] == pytest.approx(sum(r.breakdown.format_ref for r in recs) / 4)
    assert m["reward/format"] == pytest.approx(sum(r.breakdown.format for r in recs) / 4)
    assert m["reward/bias"] == -0.2 and m["subagent_latency_s"] == 2.0 and m["tokens/main"] == 20.0


def test_f_tau_is_the_runs_format_of_the_generated_text() -> None:
    text = "Checked it all.</think><answer>A</answer>"  # after the forced "<think>\n"
    para = RolloutRecord(compute_reward(text, task="mcq", answer="A", weights=W), "mcq")
    vanilla_w = RewardWeights.default(anchor_enabled=False, answer_suffix=False)
    vanilla = RolloutRecord(compute_reward(text, task="mcq", answer="A", weights=vanilla_w), "mcq")
    # generated text has no <think>: no think credit, no anchor, unbalanced; answer credit only:
    # answer-suffix mode 0.3 + 0.2, plain mode 0.2 + 0.1 (the release's logged format_reward)
    assert aggregate([para])["f_tau"] == pytest.approx(0.5)
    assert aggregate([vanilla])["f_tau"] == pytest.approx(0.3)
    # the yardstick on the scored text (prefix included, default weights): min(0.8 + 0.35, 1)
    assert aggregate([para])["f_tau_ref"] == aggregate([vanilla])["f_tau_ref"] == 1.0
    # the trained format of the scored text: 1.0 (joint cap) vs plain mode 0.3 + 0.2 + 0.1 + 0.1
    assert aggregate([para])["reward/format"] == pytest.approx(1.0)
    assert aggregate([vanilla])["reward/format"] == pytest.approx(0.7)


def test_kappa_counts_executed_calls_when_recorded() -> None:
    tool = "Look.\n</think>" + render_crop_call(0, 5) + render_crop_call(5, 9)
    b = compute_reward(tool, task="mcq", answer="A", weights=W)
    ran_one = RolloutRecord(b, "mcq", executed_calls=1)
    none_ran = RolloutRecord(b, "mcq", executed_calls=0)
    m = aggregate([ran_one, none_ran])
    assert m["kappa"] == pytest.approx(0.5) and m["kappa_written"] == pytest.approx(2.0)
    assert m["skip_tool_rate"] == pytest.approx(0.5)


def test_empty_input() -> None:
    assert aggregate([]) == {"n": 0.0}
