"""The benchmark registry: one `Benchmark` object per benchmark, addable with one module and one
registry line (a toy one goes through loading, scoring, grouping and Table 1 here), every
entry's parts agree, and an unknown name gets the close matches."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from paravt.errors import ConfigError, DataError
from paravt.eval.benchmarks import registry
from paravt.eval.benchmarks.base import (
    Benchmark,
    EvalSample,
    Groups,
    Scored,
    ScoredItem,
    Table1Column,
    by_group,
    micro_accuracy,
)
from paravt.eval.benchmarks.loading import need, video_path
from paravt.eval.benchmarks.protocol import Protocol, benchmark_section, groups_of
from paravt.eval.benchmarks.registry import UnknownBenchmarkError, get_benchmark, load_benchmark
from paravt.eval.benchmarks.scoring import aggregate, score_lmms, score_paravt
from paravt.eval.benchmarks.table1 import columns, paper_rows, table1_rows
from paravt.eval.results import ResultRow, TranscriptTurn
from paravt.report.table1 import table1_html

sys.path.insert(0, str(Path(__file__).parent))
from bench_fixtures import BUILDERS  # noqa: E402

# ---- a toy benchmark, as a module of paravt/eval/benchmarks/ would define it --------------------


def load_toy(root: Path) -> list[EvalSample]:
    """``toy.jsonl``: {"id", "video", "colour", "answer"}; videos under ``clips/``."""
    ann = need(root, "toy", ["toy.jsonl"])
    return [
        EvalSample(
            id=r["id"],
            benchmark="toy",
            video=str(video_path(root, ["clips"], r["video"])),
            question="Which colour flashes?",
            task="oe",
            answer=r["answer"],
            meta={"colour": r["colour"]},
        )
        for r in map(json.loads, ann.read_text().splitlines())
    ]


def toy_rule(
    text: str, answer: str, options: Sequence[str] | None, *, item_id: str, seed: int
) -> Scored:
    """The last word of the (reasoning-stripped) response, compared case-blind."""
    pred = text.split()[-1].strip(".").lower() if text.split() else ""
    return Scored(pred, float(pred == answer))


def toy_groups(s: EvalSample) -> Groups:
    return {"colour": str(s.meta["colour"])}


def toy_aggregate(items: Sequence[ScoredItem]) -> dict[str, object]:
    return {"by_colour": by_group(items, "colour"), **micro_accuracy(items)}


TOY = Benchmark(
    "toy",
    load_toy,
    toy_rule,
    toy_aggregate,
    toy_groups,
    answer_kind="yes_no",
    table1=Table1Column("Toy", {"Qwen3-VL-8B": 11.0, "ParaVT-8B": 22.0}),
)


@pytest.fixture
def toy() -> Iterator[Benchmark]:
    registry.register(TOY)  # the one registry line, done at run time
    try:
        yield TOY
    finally:
        registry.unregister("toy")


def _toy_root(root: Path) -> Path:
    recs = [
        {"id": "t1", "video": "a.mp4", "colour": "red", "answer": "red"},
        {"id": "t2", "video": "b.mp4", "colour": "blue", "answer": "blue"},
        {"id": "t3", "video": "c.mp4", "colour": "blue", "answer": "blue"},
    ]
    (root / "clips").mkdir(parents=True)
    (root / "toy.jsonl").write_text("\n".join(json.dumps(r) for r in recs))
    for r in recs:
        (root / "clips" / r["video"]).write_bytes(b"")
    return root


def _row(s: EvalSample, said: str) -> ResultRow:
    return ResultRow(
        id=s.id,
        mode="none",
        task=s.task,
        subset=s.subset,
        nframes=0,
        video=s.video,
        duration=3.0,
        question=s.question,
        options=s.options,
        answer=s.answer,
        prediction=None,
        score=0.0,
        correct=False,
        transcript=(TranscriptTurn("user", s.question), TranscriptTurn("assistant", said)),
    )


def test_a_registered_toy_benchmark_loads_scores_groups_and_joins_table1(
    toy: Benchmark, tmp_path: Path
) -> None:
    samples = load_benchmark("toy", _toy_root(tmp_path / "toy"))
    assert [s.id for s in samples] == ["t1", "t2", "t3"] and samples[0].video.endswith(
        "clips/a.mp4"
    )
    assert groups_of(samples[1]) == {"colour": "blue"}
    # lmms scoring: reasoning stripped first, then the toy's own rule
    assert score_lmms("toy", "<think>maybe red</think>It is Blue.", "blue") == Scored("blue", 1.0)
    # paravt scoring reads the toy's answer_kind (yes/no) in the <answer> block
    assert score_paravt("toy", "<answer>yes</answer>", "Yes") == Scored("yes", 1.0)
    # the runner's path: rows → scored items grouped by the toy's keys → its aggregation
    rows = [_row(samples[0], "red"), _row(samples[1], "green"), _row(samples[2], "blue")]
    proto = Protocol(fps=1.0, max_frames=8, max_pixels=64, prompt_class="direct", scoring="lmms")
    sec = benchmark_section("toy", rows, {s.id: s for s in samples}, proto)["none"]
    assert sec["headline"] == pytest.approx(200 / 3) and sec["headline_metric"] == "acc"
    assert sec["lmms"]["by_colour"] == {
        "blue": {"n": 2, "acc": 50.0},
        "red": {"n": 1, "acc": 100.0},
    }
    assert sec["lmms"]["n"] == 3 and sec["lmms"]["errors"] == 0
    # Table 1: its column after the built-in ones, the quoted values in the paper rows, a measured
    # cell
    assert columns()[-1] == ("toy", "Toy")
    assert {r.label: r.values["toy"] for r in paper_rows()} == {
        "Qwen3-VL-8B": 11.0,
        "ParaVT-8B": 22.0,
    }
    d = tmp_path / "run" / "toy" / "direct"
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(
        json.dumps(
            {"benchmark": {"name": "toy", "protocol": proto.describe(), "by_mode": {"none": sec}}}
        )
    )
    (ours,) = [r for r in table1_rows([d / "metrics.json"]) if r.source == "measured"]
    assert ours.values == {"toy": sec["headline"]} and ours.n == {"toy": 3}
    assert "<th>Toy</th>" in table1_html(
        [ours]
    ) and "66.7 <span class='muted'>(n=3)</span>" in table1_html([ours])


def test_unregistering_the_toy_removes_it_everywhere(toy: Benchmark) -> None:
    registry.unregister("toy")
    assert "toy" not in registry.benchmark_names() and "toy" not in dict(columns())
    with pytest.raises(UnknownBenchmarkError):
        score_lmms("toy", "red", "red")


def test_a_name_taken_by_another_benchmark_is_refused(toy: Benchmark) -> None:
    registry.register(TOY)  # the same object again: a no-op
    clash = Benchmark("toy", load_toy, toy_rule, toy_aggregate, toy_groups)
    with pytest.raises(ConfigError, match="registered twice"):
        registry.register(clash)
    assert get_benchmark("toy") is TOY


@pytest.mark.parametrize(
    "typo, suggestion",
    [
        ("videome", "videomme"),
        ("charades", "charades_sta"),
        ("lvbench_", "lvbench"),
        ("elv-halluc", "elv_halluc"),
    ],
)
def test_an_unknown_name_is_answered_with_close_matches_and_the_list(
    typo: str, suggestion: str
) -> None:
    with pytest.raises(UnknownBenchmarkError) as e:
        get_benchmark(typo)
    msg = str(e.value)
    assert f"Did you mean {suggestion!r}" in msg  # the closest first
    assert all(n in msg.split("available:")[1] for n in registry.benchmark_names())
    assert msg.endswith("(or register yours: docs/extending.md)")
    assert isinstance(e.value, ConfigError) and isinstance(e.value, DataError)


def test_a_name_near_nothing_gets_only_the_list() -> None:
    with pytest.raises(ConfigError) as e:
        load_benchmark("zzzz", ".")
    assert "Did you mean" not in str(e.value) and "videomme, videomme_sub" in str(e.value)


def _gold(b: Benchmark, answer: str) -> str:
    """A response that says exactly the gold answer, in the form the benchmark's rule reads."""
    if b.answer_kind == "interval":
        return "{} - {}".format(*answer.strip("[]").split(", "))
    return answer


@pytest.mark.parametrize("name", registry.benchmark_names())
def test_every_entry_ties_its_loader_rule_groups_and_aggregation_together(
    name: str, tmp_path: Path
) -> None:
    """What used to be two lists that nothing tied (loaders, scorers) plus a groups function: each
    entry's loader labels its samples with the entry's name, its groups feed its aggregation,
    and gold answers read through its rule score 100 in its own aggregation."""
    b = registry.REGISTRY[name]
    assert b.name == name and (not b.shares_dir_of or b.shares_dir_of in registry.REGISTRY)
    with pytest.raises(DataError, match=name.split("_sub")[0]):
        b.loader(tmp_path)  # an empty directory: the loader names the benchmark it was loading
    (tmp_path / name).mkdir()
    BUILDERS[b.shares_dir_of or name](
        tmp_path / name
    )  # tests/eval/bench_fixtures.py has every entry
    samples = load_benchmark(name, tmp_path / name, check_videos=False)
    assert samples and {s.benchmark for s in samples} == {name}
    items = [
        ScoredItem(
            s.id,
            score_lmms(name, _gold(b, s.answer), s.answer, s.options, item_id=s.id),
            groups_of(s),
        )
        for s in samples
    ]
    assert [it.scored.score for it in items] == [1.0] * len(samples)
    assert all(v for it in items for v in it.groups.values()), [it.groups for it in items]
    agg = aggregate(name, items)
    assert agg["n"] == len(samples) and agg["random_fallbacks"] == 0
    # MLVU's headline is the macro over lmms-eval's 7 task types; the fixture has 2 of them
    assert agg["micro" if name == "mlvu" else "headline"] == pytest.approx(100.0)
    for (
        key,
        breakdown,
    ) in agg.items():  # every breakdown counts every question (lvbench: ≥ 1 type each)
        if key.startswith("by_") and key != "by_aspect":
            assert sum(int(v["n"]) for v in breakdown.values()) >= len(samples), (key, breakdown)


def test_table1_columns_are_the_registered_benchmarks_that_have_one() -> None:
    assert [k for k, _ in columns()] == [
        "videomme",
        "videomme_sub",
        "longvideobench",
        "lvbench",
        "mlvu",
        "mmvu",
        "charades_sta",
    ]
    assert [r.label for r in paper_rows()] == ["Qwen3-VL-8B", "ParaVT-8B"]


def test_cli_help_lists_every_registered_benchmark() -> None:
    from typer.testing import CliRunner

    from paravt.cli import app

    for args in (["eval", "--help"], ["data", "bench", "--help"]):
        res = CliRunner().invoke(app, args, env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"})
        assert res.exit_code == 0, res.output
        flat = " ".join(res.output.replace("│", " ").split())
        assert all(n in flat for n in registry.benchmark_names()), (args, flat)
