"""The simulated pretrained base's data (paravt/data/synth/base.py, perception.py): balanced hits
and
misses, every needle kind often, and clip descriptions that state only what the frames support."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from paravt.data.chat import to_chat_messages
from paravt.data.rows import RLRow, SFTRow, VideoPart
from paravt.data.schema import read_rows
from paravt.data.synth.base import (
    MCQ_VARIANTS,
    OVQ,
    REP,
    REPORT_N,
    SEE,
    clip_counts,
    prior_traces,
    probe_rows,
)
from paravt.data.synth.perception import NOTHING, patch_stamps
from paravt.data.synth.prior import Habit
from paravt.errors import DataError
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_processor
from paravt.protocol.stats import format_stats

_TIME = re.compile(r"(\d+\.\d) s")


@pytest.fixture(scope="module")
def base_rows(synth_dir: Path) -> list:
    return read_rows(synth_dir / "base.parquet")


def _clips(rows: list) -> list[SFTRow]:
    return [r for r in rows if isinstance(r, SFTRow) and SEE in r.id]


def _is_hit(r: SFTRow) -> bool:
    return r.messages[-1].text != NOTHING


def test_hits_and_misses_are_balanced_per_video(base_rows: list) -> None:
    per_video: dict[str, Counter[bool]] = {}
    for r in _clips(base_rows):
        per_video.setdefault(r.videos[0], Counter())[_is_hit(r)] += 1
    assert len(per_video) == 10 and all(c[True] == c[False] >= 1 for c in per_video.values())
    assert all(
        r.kind == "sub" and r.videos[0].startswith("videos/train/") for r in _clips(base_rows)
    )


def test_every_needle_kind_is_seen_about_equally_often(base_rows: list) -> None:
    hits = Counter(r.extra_info.needle_kind for r in _clips(base_rows) if _is_hit(r))
    assert set(hits) == {"flash", "digit", "shape"}  # seed 7's ten videos hold all three kinds
    assert max(hits.values()) <= 1.5 * min(hits.values())
    assert clip_counts(["flash"] * 6 + ["digit"] * 3 + ["shape"] * 2, clips=4) == {
        "flash": 4,
        "digit": 8,
        "shape": 12,
    }


def test_a_stated_time_is_a_stamp_the_model_sees_of_frames_that_show_the_needle(
    synth_dir: Path, base_rows: list, tiny_qwen3_dir: str
) -> None:
    codec = ChatCodec(load_processor(tiny_qwen3_dir))
    hits = [r for r in _clips(base_rows) if _is_hit(r)]
    for r in hits[::3]:
        user = to_chat_messages(r, synth_dir, max_pixels=64 * 64)[-2]
        frames = user.videos[0]
        e = r.extra_info
        shows = [
            e.needle_start <= t < e.needle_end for t in frames.timestamps
        ]  # frame k covers [k/fps, …)
        shows += [shows[-1]] * (len(shows) % 2)
        stamps = patch_stamps(frames.timestamps)
        seen = {f"{s:.1f}" for j, s in enumerate(stamps) if any(shows[2 * j : 2 * j + 2])}
        stated = _TIME.findall(r.messages[-1].text)
        assert stated and set(stated) <= seen, (r.id, r.messages[-1].text, seen)
        assert stated[0] == min(seen, key=float) and stated[-1] == max(seen, key=float)
        prompt = codec.decode(codec.encode_message(user).ids, skip_special_tokens=False)
        assert all(
            f"<{s} seconds>" in prompt for s in stated
        )  # the processor writes these very stamps
    for r in _clips(base_rows):
        if not _is_hit(r):
            frames = to_chat_messages(r, synth_dir, max_pixels=64 * 64)[-2].videos[0]
            e = r.extra_info
            assert not any(e.needle_start <= t < e.needle_end for t in frames.timestamps), r.id


def test_overview_questions_are_plain_text_with_bare_answers(base_rows: list) -> None:
    ovq = [r for r in base_rows if isinstance(r, SFTRow) and OVQ in r.id]
    assert {int(r.id.rsplit("-n", 1)[1].split("v")[0]) for r in ovq} >= {64}
    assert {r.extra_info.task for r in ovq} == {"mcq", "tvg", "oe"}
    for r in ovq:
        assert [m.role for m in r.messages] == [
            "user",
            "assistant",
        ]  # no system prompt, no protocol
        answer = r.messages[-1].text
        assert (
            answer == r.extra_info.answer
            and not format_stats(answer).think_opened
            and "<" not in answer
        )


def test_each_videos_n64_mcq_comes_in_versions_that_all_point_at_its_needle(
    base_rows: list,
) -> None:
    """The letter-matching skill needs many MCQs: every training video's n = 64 MCQ comes
    MCQ_VARIANTS times, each answer the option naming the needle, with fresh options and order."""
    by_video: dict[str, list[SFTRow]] = {}
    label: dict[
        str, str
    ] = {}  # the open-ended answer names the needle: "red" (a flash), "digit 7", …
    for r in base_rows:
        if isinstance(r, SFTRow) and OVQ in r.id and r.extra_info.task == "mcq" and "-n64" in r.id:
            by_video.setdefault(r.videos[0], []).append(r)
        if isinstance(r, RLRow) and r.extra_info.task == "oe":
            label[r.videos[0]] = r.extra_info.answer
    assert len(by_video) == 10 and {len(v) for v in by_video.values()} == {MCQ_VARIANTS}
    letters: Counter[str] = Counter()
    for video, rows in by_video.items():
        assert (
            len({r.id for r in rows}) == len({r.extra_info.options for r in rows}) == MCQ_VARIANTS
        )
        for r in rows:
            e, letter = r.extra_info, r.messages[-1].text
            right = dict(o.split(". ", 1) for o in e.options)[letter]
            named = {"digit": f"digit {right}"}.get(e.needle_kind or "", right)
            assert named == label[video], (r.id, e.options, letter, label[video])
            assert all(
                o.split(". ", 1)[1] in r.messages[0].text for o in e.options
            )  # the prompt shows them
            letters[letter] += 1
    assert set(letters) == set("ABCD")  # the right letter moves between versions


def test_the_two_priors_share_all_but_the_habit(base_rows: list) -> None:
    strong = prior_traces(base_rows, tool_mix=1.0, habit=Habit(2))
    weak = prior_traces(base_rows, tool_mix=0.0, habit=Habit(2))
    fixed = [r for r in base_rows if isinstance(r, SFTRow)]
    assert strong[: len(fixed)] == weak[: len(fixed)] == fixed
    code = lambda rows: sum(  # noqa: E731  (the replies; the v2 system prompt names the tag)
        "<tool_code>" in m.text for r in rows for m in r.messages if m.role == "assistant"
    )
    assert code(weak) == 0 and code(strong) >= sum(isinstance(r, RLRow) for r in base_rows)
    with pytest.raises(DataError, match="no prompt"):
        prior_traces(fixed, tool_mix=1.0, habit=Habit(2))


def test_the_held_out_probe_uses_eval_videos_only(synth_dir: Path) -> None:
    probe = read_rows(synth_dir / "base_eval.parquet")
    assert probe and all(r.videos[0].startswith("videos/eval/") for r in probe)
    clips = _clips(probe)
    assert sum(map(_is_hit, clips)) == sum(not _is_hit(r) for r in clips) > 0
    assert {r.id.rsplit("-n", 1)[1] for r in probe if OVQ in r.id} == {"4", "64"}


def test_stamp_drills_copy_the_stamps_beside_the_needle_and_option_drills_its_letter() -> None:
    """The text drills teach the two lookups in words: the first and last stamps written beside the
    needle (or NOTHING when none is), and the letter of the option that names the stated needle."""
    import numpy as np

    from paravt.data.rows import ExtraInfo
    from paravt.data.synth.drills import FILLERS, READ, drill_rows

    e = ExtraInfo(
        id="v1-oe",
        task="oe",
        question="What brief event appears in the video?",
        answer="x",
        duration=90.0,
    )
    rows = drill_rows(e, np.random.default_rng(5), ("flash", "digit", "shape"), 40)
    stamps, options = (
        [r for r in rows if f"{READ}s" in r.id],
        [r for r in rows if f"{READ}o" in r.id],
    )
    assert len(stamps) == len(options) == 40 and not any(r.videos for r in rows)
    misses = 0
    for r in stamps:
        lines = [ln for ln in r.messages[-2].text.splitlines() if ln.startswith("<")]
        odd = [
            ln.split(" seconds> ")[0][1:]
            for ln in lines
            if ln.split(" seconds> ")[1] not in FILLERS
        ]
        answer = r.messages[-1].text
        if not odd:
            misses += 1
            assert answer == NOTHING
            continue
        assert _TIME.findall(answer) == ([odd[0]] if len(odd) == 1 else [odd[0], odd[-1]]), (
            lines,
            answer,
        )
        assert (
            answer.split(" appears")[0].lower() in r.messages[-2].text.lower()
        )  # names what the words say
    assert 10 <= misses <= 30
    for r in options:
        shown = r.messages[0].text.split("The clip shows ")[1].split(".\n")[0]
        opts = dict(ln.split(". ", 1) for ln in r.messages[0].text.splitlines()[-4:])
        right = opts[r.messages[-1].text]
        assert right in shown and sum(o in shown for o in opts.values()) == 1, (shown, opts)


def test_the_swapped_report_rows_disagree_with_their_frames_on_every_task() -> None:
    """The base probe's report rows, one per question of a flash video the 4-frame overview
    misses (none otherwise), in the native tool form: the open question's results name another
    colour (never the true one) and its target is that colour; the MCQ's name the colour of the
    option after the right one and its target is that option's letter; the span's show the flash
    half the video away and its target is those times, disjoint from the true span."""
    import numpy as np

    from paravt.data.synth.build import _extra
    from paravt.data.synth.questions import questions_for, span_text
    from paravt.data.synth.scenes import NEEDLE_COLORS, make_spec, other_color
    from paravt.rewards.accuracy import parse_interval, tvg_iou

    assert [other_color(c) for c in NEEDLE_COLORS] == list(NEEDLE_COLORS[3:] + NEEDLE_COLORS[:3])
    seen = Counter()
    for i in range(16):
        rng = np.random.default_rng([11, i])
        spec = make_spec(f"v{i}", rng, needle_kinds=("flash", "digit"))
        qs = questions_for(spec.needle, rng)
        extras = [_extra(spec, q, spec.name, 64, "eval") for q in qs]
        rows = probe_rows(spec, "v.mp4", qs, extras, rng)
        listed = [r for r in rows if REP in r.id]
        reps = {r.extra_info.task: r for r in listed}
        assert len(listed) == len(reps)  # one a task
        missed = bool(extras[0].tool_necessary_at_n and extras[0].tool_necessary_at_n[REPORT_N])
        kind = spec.needle.kind if missed else f"{spec.needle.kind}, seen at {REPORT_N}"
        seen[kind] += 1
        if kind != "flash":  # a digit, or a flash its 4-frame overview shows: frames vs report
            assert not reps
            continue
        assert sorted(reps) == ["mcq", "oe", "tvg"]
        for rep in reps.values():
            assert [m.role for m in rep.messages] == [
                "system",
                "user",
                "assistant",
                "tool",
                "assistant",
            ]
            (part,) = [p for p in rep.messages[1].content if isinstance(p, VideoPart)]
            assert part.nframes == REPORT_N  # an overview that rarely shows the flash
            assert format_stats(rep.messages[2].text).n_tool_call_ok >= 2
            assert rep.messages[-1].text.count("</think>\n") == 1
        target = {t: r.messages[-1].text.split("</think>\n")[1] for t, r in reps.items()}
        tool = {t: r.messages[3].text for t, r in reps.items()}
        shown = other_color(spec.needle.color)
        assert target["oe"] == shown != spec.needle.color == reps["oe"].extra_info.answer
        assert f"full-frame {shown} flash" in tool["oe"] and spec.needle.color not in tool["oe"]
        mcq = reps["mcq"].extra_info
        assert target["mcq"] != mcq.answer and len(target["mcq"]) == 1
        named = dict(o.split(". ", 1) for o in mcq.options or ())[target["mcq"]]
        assert f"full-frame {named} flash" in tool["mcq"] and spec.needle.color not in tool["mcq"]
        span = parse_interval(target["tvg"])
        assert span is not None and tvg_iou(target["tvg"], reps["tvg"].extra_info.answer) == 0
        assert span[1] - span[0] == pytest.approx(spec.needle.end - spec.needle.start)
        assert reps["tvg"].extra_info.answer == span_text(spec.needle.start, spec.needle.end)
        assert f"full-frame {spec.needle.color} flash" in tool["tvg"]
        assert f"{span[0]:g}" in tool["tvg"]  # the reported times are the target's
    assert seen["flash"] >= 3 and seen["digit"] >= 1, seen  # both cases were met


def test_report_drills_answer_from_the_tool_results_alone() -> None:
    """A report drill is a tool transcript in text: no frames, the native form's calls over the
    whole video, the results naming the drill's needle only in the window(s) holding it, and the
    answer that needle's colour (or label): the results are the only evidence."""
    import numpy as np

    from paravt.data.rows import ExtraInfo
    from paravt.data.synth.drills import drill_rows, is_report_drill
    from paravt.data.synth.oracle import plan_windows
    from paravt.protocol.parser import parse_calls

    e = ExtraInfo(id="v1-oe", task="oe", question="q", answer="x", duration=130.0)
    rows = [
        r
        for r in drill_rows(e, np.random.default_rng(3), ("flash", "digit"), 0, 30)
        if is_report_drill(r)
    ]
    assert len(rows) == 30 and not any(r.videos for r in rows)
    answers = set()
    for r in rows:
        system, user, calls, tool, final = r.messages
        assert "<video>" not in user.text and isinstance(user.content, str)
        windows = [
            (c.arguments["start_time"], c.arguments["end_time"])
            for c in parse_calls(calls.text).calls
        ]
        assert windows == [(w.start, w.end) for w in plan_windows(130.0)]
        answer = final.text.split("</think>\n")[1]
        hits = [ln for ln in tool.text.splitlines() if NOTHING not in ln]
        assert 1 <= len(hits) <= 2 and all(answer in ln for ln in hits), (tool.text, answer)
        answers.add(answer)
    assert len(answers) >= 8  # colours and digits drawn afresh per drill


def test_report_drills_ask_the_tasks_of_report_tasks_in_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``drill_rows`` writes its report drills' tasks in ``REPORT_TASKS``'s order, again and again:
    the MCQ's answer a letter, the span's a ``[start, end]``, the open question's a colour."""
    import numpy as np

    from paravt.data.rows import ExtraInfo
    from paravt.data.synth import drills
    from paravt.data.synth.questions import LETTERS
    from paravt.data.synth.scenes import NEEDLE_COLORS

    e = ExtraInfo(id="v1-oe", task="oe", question="q", answer="x", duration=130.0)

    def tails() -> list[str]:
        rows = drills.drill_rows(e, np.random.default_rng(3), ("flash",), 0, 9)
        return [r.messages[-1].text.split("</think>\n")[1] for r in rows]

    assert all(t in NEEDLE_COLORS for t in tails())  # the base's: open questions only
    monkeypatch.setattr(drills, "REPORT_TASKS", ("oe", "mcq", "tvg"))
    forms = ["oe" if t in NEEDLE_COLORS else "mcq" if t in LETTERS else "tvg" for t in tails()]
    assert forms == ["oe", "mcq", "tvg"] * 3
    assert all(t.startswith("[") for t in tails()[2::3])


LETTER_HEADS = ("A. ", "B. ", "C. ", "D. ")


def test_report_drills_of_the_mcq_and_the_span_answer_from_the_results() -> None:
    """The MCQ's report drill lists its options in the prompt and answers the letter of the one
    naming the reported needle; the span's answers the first hit line's start to the last one's
    end; an unknown task is refused. Flashes only: a digit's option would match the times."""
    import re

    import numpy as np

    from paravt.data.rows import ExtraInfo
    from paravt.data.synth.drills import report_drill
    from paravt.data.synth.scenes import draw_needle

    e = ExtraInfo(id="v2-oe", task="oe", question="q", answer="x", duration=140.0)
    rng = np.random.default_rng(5)
    letters, split = set(), 0  # split: span drills whose needle straddles two windows
    for i in range(30):
        needle = draw_needle(rng, ("flash",), 0, 1)
        m = report_drill(f"m{i}", e, needle, rng, task="mcq").messages
        t = report_drill(f"t{i}", e, needle, rng, task="tvg").messages
        # the MCQ: the options in the prompt, the answer the letter whose option names the colour
        letter = m[-1].text.split("</think>\n")[1]
        options = dict(ln.split(". ", 1) for ln in m[1].text.splitlines() if ln[:3] in LETTER_HEADS)
        hit = next(ln for ln in m[3].text.splitlines() if NOTHING not in ln and "appears" in ln)
        assert options[letter] in hit and sum(o in hit for o in options.values()) == 1
        letters.add(letter)
        # the span: from the first hit's start to the last hit's end
        span = t[-1].text.split("</think>\n")[1]
        hits = [ln for ln in t[3].text.splitlines() if "appears" in ln and NOTHING not in ln]
        split += len(hits) == 2
        times = [float(x) for ln in hits for x in re.findall(r"(\d+(?:\.\d+)?) s", ln)]
        assert span == f"[{int(min(times))}, {int(max(times))}]" and "[start, end]" in t[1].text
    assert letters == {"A", "B", "C", "D"} and split >= 1
    with pytest.raises(ValueError, match="not one of"):
        report_drill("x", e, draw_needle(rng, ("flash",), 0, 1), rng, task="count")  # type: ignore[arg-type]


def test_the_swapped_span_lies_half_the_video_away_inside_it_for_any_start() -> None:
    """``swapped_report``'s span for every whole-second start of a 3–8 s flash in 60–150 s videos
    (entry n's review: ``start − D/2`` went below 0): inside the video, the flash's length,
    disjoint from the truth, and the tool results state it."""
    import numpy as np

    from paravt.data.synth.base import swapped_report
    from paravt.data.synth.build import _extra
    from paravt.data.synth.questions import tvg
    from paravt.data.synth.scenes import make_spec
    from paravt.rewards.accuracy import parse_interval, tvg_iou

    spec = make_spec("v", np.random.default_rng(0), needle_kinds=("flash",))
    for duration in (60, 61, 97, 150):
        for length in (3, 8):
            for start in range(0, duration - length + 1):
                needle = replace(spec.needle, start=float(start), end=float(start + length))
                moved = replace(spec, duration=float(duration), needle=needle)
                q = tvg(needle)
                shown, answer = swapped_report(moved, q, _extra(moved, q, "v", 64, "eval"))
                span = parse_interval(answer)
                assert span is not None and 0 <= span[0] and span[1] <= duration, (duration, start)
                assert span[1] - span[0] == pytest.approx(length)
                assert tvg_iou(answer, q.answer) == 0
                assert (shown.needle_start, shown.needle_end) == span
