"""rollouts.jsonl: which rollouts a step shows, and what each row carries."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from paravt.rewards import RewardBreakdown
from paravt.rl.rollouts import RolloutLog, pick, read_rollouts


def _b(**kw: object) -> RewardBreakdown:
    base = RewardBreakdown(
        reward=1.0,
        terms={"acc": 1.0},
        components={"format_base": 0.5},
        format=1.0,
        format_generated=1.0,
        format_ref=1.0,
        bias=0.0,
        answer="A",
        degenerate=False,
        closed_think=True,
        closed_tool_call=True,
        closed_answer=True,
        tool_code=False,
        n_calls=2,
    )
    return replace(base, **kw)


def test_pick_draws_n_at_random_then_adds_the_first_of_each_failure_kind() -> None:
    rewards = [_b() for _ in range(10)]
    rewards[7] = _b(tool_code=True)
    rewards[8] = _b(closed_answer=False)
    rewards[9] = _b(closed_answer=False)  # a second one is not added
    chosen = pick(rewards, 2, seed=3)
    randoms = [i for i, why in chosen if why == "random"]
    assert len(randoms) == 2 and chosen == pick(rewards, 2, seed=3)  # seeded
    notable = {why: i for i, why in chosen if why != "random"}
    if 7 not in randoms:
        assert notable["tool_code"] == 7
    if not {8, 9} & set(randoms):
        assert notable["unclosed_answer"] == 8
    assert "unclosed_think" not in notable  # no rollout shows it


def test_pick_adds_nothing_twice_and_handles_fewer_rollouts_than_n() -> None:
    rewards = [_b(tool_code=True, closed_answer=False)]
    assert pick(rewards, 4, seed=0) == [(0, "random")]
    assert pick([], 4, seed=0) == []


def test_log_truncates_on_resume_and_tolerates_a_torn_line(tmp_path: Path) -> None:
    log = RolloutLog(tmp_path)
    log.append([{"step": 1, "completion": "a"}, {"step": 2, "completion": "b"}])
    log.append([{"step": 3, "completion": "c"}])
    with open(log.path, "a") as f:
        f.write('{"step": 4, "compl')  # killed mid-write
    log.truncate_after(2)
    assert [r["step"] for r in read_rollouts(tmp_path)] == [1, 2]
    log.start_fresh()
    assert read_rollouts(tmp_path) == []


def test_shown_steps_are_first_middle_last() -> None:
    from paravt.report.rollouts import shown_steps

    assert shown_steps([1, 2]) == [1, 2]
    assert shown_steps(list(range(1, 31))) == [1, 16, 30] or shown_steps(list(range(1, 31))) == [
        1,
        15,
        30,
    ]


def test_report_shows_a_reversion_in_the_models_own_text(tmp_path: Path) -> None:
    import json

    from paravt.report.page import build_report

    run = tmp_path / "rl"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"name": "paragrpo", "kind": "rl", "config": {}}))
    (run / "train_log.jsonl").write_text(
        "".join(json.dumps({"step": s, "f_tau": 1.0}) + "\n" for s in range(1, 6))
    )
    rows = [
        {
            "step": s,
            "picked": "tool_code" if s == 5 else "random",
            "nframes": 8,
            "reward": 0.5,
            "terms": {"acc": 0.0, "format_base": 0.5},
            "advantage": None if s == 3 else -0.7,
            "tags": {
                "closed_think": True,
                "closed_tool_call": False,
                "closed_answer": s != 5,
                "tool_code": s == 5,
                "n_calls": 0,
            },
            "gold": "B",
            "answer": "B",
            "completion": f"<think>step {s}</think><tool_code>crop_video(1, 9)</tool_code>",
            "calls": [{"name": "crop_video", "window": [1, 9], "summary": "a red flash at 4 s"}],
        }
        for s in range(1, 6)
    ]
    RolloutLog(run).append(rows)
    page = build_report([tmp_path], tmp_path / "report.html").read_text(encoding="utf-8")
    section = page.split('id="rollouts"', 1)[1].split("<section", 1)[0]
    assert (
        "step 1" in section
        and "step 3 " in section
        and "step 5" in section
        and "step 2 " not in section
    )
    assert "<mark>&lt;tool_code&gt;</mark>crop_video(1, 9)" in section
    assert "A=dropped" in section and "A=-0.70" in section
    assert "a red flash at 4 s" in section
