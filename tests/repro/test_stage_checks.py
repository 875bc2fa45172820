"""Issue 27's stage checks on hand-made inputs: the cold-start calibration check (closure rates and
<tool_code> reversion of τ = 0.7 rollouts) and the base's held-out probe, each passing and
failing."""

from __future__ import annotations

from dataclasses import replace

from paravt.data.rows import ExtraInfo, Message, SFTRow
from paravt.data.synth.perception import NOTHING
from paravt.repro.base_probe import base_checks, forced_think, score_probe
from paravt.repro.task_check import cold_start_checks
from paravt.rewards import RewardWeights
from paravt.rewards.composite import compute_reward
from paravt.rewards.metrics import RolloutRecord, aggregate

OPTS = ("A. red", "B. blue", "C. green", "D. cyan")
CALL = (
    '<tool_call>{"name": "crop_video", "arguments": {"video_path": "v.mp4", "start_time": 0, '
    '"end_time": 30}}</tool_call>'
)
FULL = f"<think>\nlook\n</think>\n{CALL}"  # think closed, a closed JSON call
NO_THINK_CALL = f"<think>\nlook and look {CALL}"  # think never closed, the call closed
CODE = "<think>\nlook\n</think>\n<tool_code>crop_video(0, 30)</tool_code>"  # the pretraining habit
ANSWER = "<think>\nit is red\n</think>\n<answer>A</answer>"
RAMBLE = "<think>\nlook at the video, I can see"  # nothing closed


def _metrics(texts: list[str]) -> dict[str, float]:
    w = RewardWeights.default()
    return aggregate(
        [
            RolloutRecord(
                compute_reward(t, task="mcq", answer="A", weights=w, options=OPTS, prefix=""),
                task="mcq",
            )
            for t in texts
        ]
    )


def test_a_fragile_cold_start_like_the_papers_passes() -> None:
    # 10 rollouts: think closed 5, a closed JSON call 5, answer closed 3, one <tool_code>
    texts = [FULL] * 2 + [ANSWER] * 3 + [NO_THINK_CALL] * 3 + [CODE] + [RAMBLE]
    m = _metrics(texts)
    assert (m["closed/think"], m["closed/tool_call"], m["closed/answer"]) == (0.6, 0.5, 0.3)
    out = cold_start_checks(m)
    assert (
        out["cold_start_closure"]["holds"]
        and out["cold_start_closure"]["value"]["ours"]["think"] == 60.0
    )
    assert out["cold_start_closure"]["value"]["paper"] == {
        "think": 51.8,
        "tool_call": 47.4,
        "answer": 30.1,
    }
    assert out["cold_start_tool_code"]["value"] == 0.1 and out["cold_start_tool_code"]["holds"]


def test_a_robust_cold_start_without_reversion_fails() -> None:
    out = cold_start_checks(
        _metrics([FULL] * 5 + [ANSWER] * 5)
    )  # every think closed, no <tool_code>
    assert not out["cold_start_closure"]["holds"] and not out["cold_start_tool_code"]["holds"]
    assert not cold_start_checks({})["cold_start_closure"][
        "holds"
    ]  # nothing measured: does not hold


def _clip(i: int, hit: bool) -> SFTRow:
    e = ExtraInfo(
        id=f"e{i}",
        task="mcq",
        question="q",
        answer="A",
        duration=120.0,
        needle_start=50.0,
        needle_end=55.0,
    )
    target = "A full-frame red flash appears from 50.5 s to 54.5 s." if hit else NOTHING
    return SFTRow(
        f"e{i}-mcq-see-{'h' if hit else 'm'}{i}",
        "sub",
        "sub",
        (Message("assistant", target),),
        ("v",),
        e,
    )


def _mcq(i: int, n: int) -> SFTRow:
    e = ExtraInfo(id=f"e{i}", task="mcq", question="q", answer="B", duration=120.0, options=OPTS)
    return SFTRow(f"e{i}-mcq-ovq-n{n}", "main", "none", (Message("assistant", "B"),), ("v",), e)


def _open(i: int, n: int) -> SFTRow:
    e = ExtraInfo(
        id=f"e{i}-oe",
        task="oe",
        question="What colour is the brief flash?",
        answer="red",
        duration=120.0,
    )
    return SFTRow(f"e{i}-oe-ovq-n{n}", "main", "none", (Message("assistant", "red"),), ("v",), e)


THOUGHT = "<think>\nLet me look at the video carefully before answering.\n</think>\n"


def _report(i: int) -> SFTRow:
    """A swapped-report row: the frames show red, the tool results say blue (the target, after
    the think the probe forces)."""
    e = replace(_open(i, 4).extra_info, id=f"e{i}-oe")
    final = Message("assistant", THOUGHT + "blue")
    return SFTRow(f"e{i}-oe-rep-n4", "main", "parallel", (final,), ("v",), e)


def test_a_base_that_reads_its_tool_response_answers_the_reported_colour() -> None:
    rows = [_report(i) for i in range(5)]
    replies = [THOUGHT + "blue"] * 3 + ["Blue."] + [THOUGHT + "red, not blue? red"]
    probe = score_probe(rows, replies)
    assert probe["reads_report"] == {"rate": 0.8, "hits": 4, "of": 5}  # after the last </think>
    assert probe["keeps_truth"] == {"rate": 0.2, "hits": 1, "of": 5}
    assert base_checks(probe)["base_reads_report"]["holds"]
    # a think that names the reported colour, then the true answer: it did not answer from it
    probe = score_probe(rows, ["<think>\nThe tool says blue.\n</think>\nred"] * 4 + ["blue"])
    assert probe["reads_report"]["rate"] == 0.2 and probe["keeps_truth"]["rate"] == 0.8
    assert not base_checks(probe)["base_reads_report"]["holds"]
    assert forced_think(rows[0]) == THOUGHT and forced_think(_open(0, 4)) == ""


def _task_report(i: int, task: str, answer: str, target: str) -> SFTRow:
    """A swapped-report row of ``task``: the truth ``answer``, the report's answer ``target``."""
    options = OPTS if task == "mcq" else None
    e = replace(
        _open(i, 4).extra_info, id=f"e{i}-{task}", task=task, answer=answer, options=options
    )
    final = Message("assistant", THOUGHT + target)
    return SFTRow(f"e{i}-{task}-rep-n4", "main", "parallel", (final,), ("v",), e)


def test_the_report_is_read_per_task_a_span_by_the_larger_overlap_a_letter_as_the_eval() -> None:
    rows = [
        _task_report(0, "oe", "red", "blue"),
        _task_report(1, "mcq", "A", "C"),
        _task_report(2, "mcq", "A", "C"),
        _task_report(3, "tvg", "[10.0, 14.0]", "[160.0, 164.0]"),
        _task_report(4, "tvg", "[10.0, 14.0]", "[160.0, 164.0]"),
    ]
    replies = [
        THOUGHT + "blue",
        THOUGHT + "green",  # the reported option's text: its letter, as the eval reads it
        THOUGHT + "A, the red one",  # the true letter
        THOUGHT + "[161.5, 170.0]",  # overlaps the reported span only
        THOUGHT + "[11, 160.5]",  # overlaps both, the truth more (4/150.5 vs 0.5/150.5)
    ]
    probe = score_probe(rows, replies)
    by = {
        t: (d["reads_report"]["rate"], d["keeps_truth"]["rate"])
        for t, d in probe["report_by_task"].items()
    }
    assert by == {"mcq": (0.5, 0.5), "oe": (1.0, 0.0), "tvg": (0.5, 0.5)}
    assert probe["reads_report"]["of"] == 1  # the headline counts the open questions only
    check = base_checks(probe)["base_reads_report_by_task"]
    assert not check["holds"] and check["value"] == probe["report_by_task"]  # MCQ, span at 0.5
    replies[2], replies[4] = THOUGHT + "C", THOUGHT + "[0, 300]"  # the whole video: neither
    assert score_probe(rows, replies)["report_by_task"]["tvg"]["keeps_truth"]["hits"] == 0
    assert not base_checks(score_probe(rows, replies))["base_reads_report_by_task"]["holds"]
    replies[4] = THOUGHT + "[150, 165]"
    assert base_checks(score_probe(rows, replies))["base_reads_report_by_task"]["holds"]
    # a task never probed never holds
    assert not base_checks(score_probe(rows[:3], replies[:3]))["base_reads_report_by_task"]["holds"]


def test_the_report_rows_count_each_reply_in_its_tasks_form_right_or_wrong() -> None:
    rows = [_task_report(i, t, a, r) for i, (t, a, r) in enumerate([
        ("oe", "red", "blue"), ("oe", "red", "blue"),
        ("mcq", "A", "C"), ("mcq", "A", "C"), ("mcq", "A", "C"),
        ("tvg", "[10.0, 14.0]", "[160.0, 164.0]"), ("tvg", "[10.0, 14.0]", "[160.0, 164.0]"),
        ("tvg", "[10.0, 14.0]", "[160.0, 164.0]"),
    ])]  # fmt: skip
    replies = [
        THOUGHT + "green",  # wrong, an open answer still
        THOUGHT + "[3, 7]",  # a span for an open question
        THOUGHT + "B",  # a wrong letter is the MCQ's form
        THOUGHT + "green",  # an option's text is too
        THOUGHT + "magenta",  # a colour no option names is not
        THOUGHT + "blue",  # the base's colour for a span
        "<think>a</think>from 1 to 2 s</think>[161, 170]",  # the span after the LAST </think>
        "<think>a</think>from 1 to 2 s</think>\nblue",  # times before the LAST </think>: not it
    ]
    by = {t: d["in_form"] for t, d in score_probe(rows, replies)["report_by_task"].items()}
    assert {t: (d["hits"], d["of"]) for t, d in by.items()} == {
        "oe": (1, 2), "mcq": (2, 3), "tvg": (1, 3),
    }  # fmt: skip


def test_a_base_that_sees_passes_the_base_checks() -> None:
    rows = [_clip(i, True) for i in range(10)] + [_clip(i, False) for i in range(10)]
    rows += [_mcq(i, 64) for i in range(10)] + [_mcq(i, 4) for i in range(8)]
    rows += [_open(i, 64) for i in range(5)] + [_open(i, 4) for i in range(2)]
    rows += [_report(i) for i in range(5)]
    rows += [_task_report(9, "mcq", "A", "C"), _task_report(9, "tvg", "[1, 5]", "[90, 94]")]
    replies = (
        ["A large digit 3 appears from 52.5 s to 54.5 s."] * 9
        + ["A red flash appears at 80.5 s."]
        + [NOTHING] * 10
        + ["B"] * 9
        + ["C"]
        + ["B"] * 2
        + ["A"] * 6
        + ["Red."] * 4
        + ["green"]
        + ["red"]
        + ["blue"]
        + [THOUGHT + "blue"] * 5
        + [THOUGHT + "C", THOUGHT + "[90.0, 94.0]"]
    )  # normalised: "Red." is "red"
    probe = score_probe(rows, replies)
    assert probe["clip_recall"]["rate"] == 1.0 and probe["clip_timed_right"]["rate"] == 0.9
    assert probe["clip_false_reports"]["rate"] == 0.0 and probe["mcq_chance"] == 0.25
    assert probe["open"] == {
        "4": {"rate": 0.5, "hits": 1, "of": 2},
        "64": {"rate": 0.8, "hits": 4, "of": 5},
    }
    checks = base_checks({**probe, "induction": {"0": 0.97, "100": 0.9, "250": 0.8}})
    assert all(c["holds"] for c in checks.values()), checks
    assert not base_checks(probe)["base_copies_in_context"]["holds"]  # its copy not measured


def test_a_base_that_reports_everywhere_or_guesses_fails() -> None:
    rows = [_clip(i, True) for i in range(5)] + [_clip(i, False) for i in range(5)]
    rows += (
        [_mcq(i, 64) for i in range(5)]
        + [_mcq(i, 4) for i in range(5)]
        + [_open(i, 64) for i in range(5)]
    )
    replies = (
        ["A red flash appears from 10.5 s to 12.5 s."] * 10
        + ["A"] * 5
        + ["B"] * 5
        + ["red flash"] * 5
    )
    checks = base_checks(score_probe(rows, replies))
    assert not checks["base_overview_open_at_64"][
        "holds"
    ]  # "red flash" is not "red": no partial credit
    assert checks["base_clip_recall"]["holds"]  # it reports every hit ...
    assert (
        not checks["base_clip_timed_right"]["holds"]
        and not checks["base_clip_false_reports"]["holds"]
    )
    assert (
        not checks["base_overview_mcq_at_64"]["holds"]
        and not checks["base_overview_mcq_at_4"]["holds"]
    )
    assert not any(c["holds"] for c in base_checks({}).values())


def test_the_probe_breaks_its_rates_down_by_needle_kind() -> None:
    rows = [_clip(i, True) for i in range(4)] + [_clip(i, False) for i in range(2)] + [_mcq(0, 64)]
    rows = [
        replace(r, extra_info=replace(r.extra_info, needle_kind="flash" if i < 2 else "digit"))
        for i, r in enumerate(rows)
    ]
    replies = [
        "A full-frame red flash appears from 50.5 s to 54.5 s.",
        NOTHING,
        "A large digit 3 appears at 52.5 s.",
        "A full-frame red flash appears at 90.5 s.",
        "A large digit 3 appears at 10.5 s.",
        NOTHING,
        "B",
    ]
    k = score_probe(rows, replies)["by_kind"]
    assert (
        k["flash"]["recall"] == {"rate": 0.5, "hits": 1, "of": 2}
        and k["flash"]["named_right"]["hits"] == 1
    )
    assert k["digit"]["recall"]["rate"] == 1.0 and k["digit"]["timed_right"]["hits"] == 1
    assert k["digit"]["named_right"] == {
        "rate": 0.5,
        "hits": 1,
        "of": 2,
    }  # the red flash is named right
    assert k["digit"]["false_reports"] == {"rate": 0.5, "hits": 1, "of": 2}
    assert k["digit"]["mcq_64"] == {"rate": 1.0, "hits": 1, "of": 1}


def test_the_report_lists_every_base_check() -> None:
    """report.html shows only the checks TASK_CHECKS names: a new base check must be there."""
    from paravt.report.repro_checks import TASK_CHECKS

    listed = {k for k, _ in TASK_CHECKS}
    assert set(base_checks({})) <= listed, set(base_checks({})) - listed
