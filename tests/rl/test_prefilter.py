from __future__ import annotations

from paravt.data.rows import ExtraInfo, Message, RLRow
from paravt.rl.prefilter import all_wrong, answer_too_long, prefilter


def _row(rid: str, task: str, answer: str) -> RLRow:
    return RLRow(rid, (Message("user", "q"),), ("v.mp4",), ExtraInfo(rid, task, "q", answer, 60.0))  # type: ignore[arg-type]


def test_open_ended_answers_over_15_words_are_too_long() -> None:
    assert not answer_too_long("oe", " ".join(["w"] * 15))
    assert answer_too_long("oe", " ".join(["w"] * 16))
    assert not answer_too_long("mcq", " ".join(["w"] * 40))  # only open-ended answers count


def test_all_wrong_needs_every_rollout_below_the_threshold() -> None:
    assert all_wrong([0.0, 0.2, 0.49])
    assert not all_wrong([0.0, 0.5])  # one rollout at 0.5 (IoU / F1) counts as correct
    assert not all_wrong([])  # no rollouts: no evidence, keep


def test_prefilter_drops_by_rule_and_reports_each_drop() -> None:
    rows = [
        _row("long", "oe", " ".join(["w"] * 20)),
        _row("hard", "mcq", "A"),
        _row("ok", "tvg", "[1, 2]"),
        _row("untested", "mcq", "B"),
    ]
    kept, rep = prefilter(rows, {"hard": [0.0] * 8, "ok": [0.0] * 7 + [1.0], "long": [1.0] * 8})
    assert [r.id for r in kept] == ["ok", "untested"]
    assert rep.by_rule == {"all_wrong": 1, "answer_length": 1}
    assert [(d.id, d.rule) for d in rep.dropped] == [
        ("long", "answer_length"),
        ("hard", "all_wrong"),
    ]
    assert rep.to_json()["dropped"] == 2


def test_unanimous_drops_groups_that_are_all_right_and_records_the_rule() -> None:
    """The paper's DAPO filter drops all-wrong (unreachable) AND unanimous (all-right) groups; a
    mixed group stays; the unanimous rule can be turned off."""
    rows = [_row("easy", "mcq", "A"), _row("mixed", "mcq", "B"), _row("hard", "tvg", "[1, 2]")]
    accs = {"easy": [1.0, 1.0, 0.5, 1.0], "mixed": [1.0, 0.0, 0.0, 0.0], "hard": [0.4, 0.0]}
    kept, rep = prefilter(rows, accs)
    assert [r.id for r in kept] == ["mixed"]
    assert [(d.id, d.rule) for d in rep.dropped] == [("easy", "unanimous"), ("hard", "all_wrong")]
    assert rep.dropped[0].detail == "4 rollouts, min accuracy 0.50 >= 0.5"
    assert rep.to_json()["by_rule"] == {"all_wrong": 1, "unanimous": 1}
    kept, rep = prefilter(rows, accs, unanimous=False)
    assert [r.id for r in kept] == ["easy", "mixed"] and rep.by_rule == {"all_wrong": 1}
