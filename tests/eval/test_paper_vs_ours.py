"""The report's "paper vs ours" section on a hand-written `paravt repro` directory: the paper's
quoted Table 2 / Table 5 numbers sit beside ours in the right rows, a variant not run shows "–",
the seed band is aggregated correctly, and non-repro directories get no section."""

from __future__ import annotations

import json
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import fakeruns  # noqa: E402

from paravt.report.html_parts import iv_cell  # noqa: E402
from paravt.report.page import build_report  # noqa: E402
from paravt.report.paper_vs_ours import acc_curves  # noqa: E402
from paravt.report.repro_figures import seed_band  # noqa: E402
from paravt.report.repro_runs import find_runs  # noqa: E402


def iv(mean: float, lo: float | None = None, hi: float | None = None) -> dict[str, Any]:
    return {"mean": mean, "lo": lo, "hi": hi, "n": 2}


def share(hits: int, of: int) -> dict[str, Any]:
    return {"rate": hits / of if of else None, "hits": hits, "of": of}


def variant(
    f: dict, k: dict, think: float, modes: tuple[str, ...], acc4: float, acc64: float
) -> dict[str, Any]:
    ev = {
        m: {
            "acc_by_n": {"4": iv(acc4, acc4 - 0.1, acc4 + 0.1), "64": iv(acc64)},
            "acc_necessary": iv(acc4),
            "acc_unnecessary": iv(acc64),
        }
        for m in modes
    }
    return {
        "f_tau": f,
        "kappa": k,
        "tool_code_rate": iv(0.0),
        "skip_tool_rate": iv(0.5),
        "closure": {
            "think": iv(think, think - 0.05, think + 0.05),
            "tool_call": iv(0.2),
            "answer": iv(0.3),
        },
        "seeds": 2,
        "eval": ev,
        "diagnosis": {
            "episodes_with_windows": 24,
            "coverage": share(23, 24),
            "recall": share(6, 24),
            "false_reports": share(0, 95),
            "acc_given_report": share(1, 6),
        },
    }


GRID = ("parallel", "sequential", "none")
SUMMARY = {
    "variants": {
        "sft": variant(iv(0.111), iv(1.5), 0.4, GRID, 0.25, 0.5),
        "vanilla_grpo": variant(iv(0.21, 0.15, 0.27), iv(0.03, 0.0, 0.08), 0.3, GRID, 0.2, 0.6),
        "paragrpo": variant(iv(0.456, 0.4, 0.51), iv(0.8, 0.6, 1.0), 0.45, GRID, 0.35, 0.62),
        "weak_prior_vanilla": variant(iv(0.777), iv(0.0), 0.9, ("parallel",), 0.1, 0.7),
    },
    "sft_emits_think_without_prefix": 0.625,
    "claims": [
        {
            "claim": "PARA-GRPO lifts f_tau over vanilla GRPO",
            "paper": {"paragrpo.f_tau": 0.41, "vanilla_grpo.f_tau": 0.13},
            "ours": {"paragrpo.f_tau": 0.456, "vanilla_grpo.f_tau": 0.21},
            "holds": True,
            "note": "2 seeds: 95% intervals compared",
        },
        {
            "claim": "removing R_tool collapses kappa",
            "paper": {"paragrpo.kappa": 0.21},
            "ours": None,
            "holds": False,
            "note": "not run: paragrpo_no_rtool",
        },
        {
            "claim": "parallel beats sequential",
            "paper": {"parallel.VideoMME": 62.1},
            "ours": {"parallel_minus_sequential": iv(0.04, -0.02, 0.1)},
            "holds": False,
            "note": "",
        },
    ],
    "meta": {
        "preset": "quick",
        "seeds": 2,
        "variants": ["sft", "vanilla_grpo", "paragrpo"],
        "eval_questions": 210,
        "wall_s": 1234.5,
        "stage_s": {"synth": 12.5, "paragrpo/seed0": 300.0},
    },
}


def write_repro(root: Path, summary: Any = SUMMARY) -> Path:
    root.mkdir(parents=True)
    (root / "synth").mkdir()
    (root / "synth" / ".repro-stage-done").write_text("12.5\n")
    (root / "summary.json").write_text(summary if isinstance(summary, str) else json.dumps(summary))
    for v, seeds in (("vanilla_grpo", (4, 3)), ("paragrpo", (4, 4))):
        for s, steps in enumerate(seeds):
            d = root / v / f"seed{s}"
            d.mkdir(parents=True)
            rows = [
                {"step": t, "f_tau": 0.1 * t + s * 0.05, "kappa": 1.0 / t}
                for t in range(1, steps + 1)
            ]
            (d / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


class Tables(HTMLParser):
    """Cell texts of every table, by the table's class: {class: [[cell, …], …]}."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.ids: list[str] = []
        self.alts: list[str] = []
        self._cls: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "img":
            self.alts.append(a.get("alt", ""))
        if tag == "table":
            self._cls.append(a.get("class") or "")
            self.tables.setdefault(self._cls[-1], [])
        elif tag == "tr" and self._cls:
            self.tables[self._cls[-1]].append([])
        elif tag == "td":
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append(" | ")

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.tables[self._cls[-1]][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table" and self._cls:
            self._cls.pop()


def parse(path: Path) -> Tables:
    t = Tables()
    t.feed(path.read_text(encoding="utf-8"))
    return t


def row(t: Tables, table: str, first: str) -> list[str]:
    rows = [r for r in t.tables[table] if r and r[0] == first]
    assert len(rows) == 1, (first, t.tables[table])
    return rows[0]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Tables:
    root = write_repro(tmp_path_factory.mktemp("r") / "repro")
    return parse(build_report([root], root / "report.html"))


def test_table2_puts_the_paper_beside_ours_in_the_right_rows(page: Tables) -> None:
    # columns: variant, paper row, f paper, f ours, κ paper, κ ours, acc n=4, acc n=64, VideoMME
    # paper
    assert row(page, "paper-table2", "vanilla_grpo") == [
        "vanilla_grpo",
        "+ SFT + GRPO (vanilla)",
        "0.13",
        "0.210 [0.150, 0.270]",
        "0.02",
        "0.030 [0.000, 0.080]",
        "0.200 [0.100, 0.300]",
        "0.600",
        "62.0",
    ]
    para = row(page, "paper-table2", "paragrpo")
    assert para[1:6] == [
        "+ SFT + PARA-GRPO",
        "0.41",
        "0.456 [0.400, 0.510]",
        "0.21",
        "0.800 [0.600, 1.000]",
    ]
    assert row(page, "paper-table2", "sft")[2:6] == [
        "0.13",
        "0.111",
        "2.50",
        "1.500",
    ]  # one value: no interval


def test_a_missing_variant_shows_a_dash_and_a_variant_without_paper_row_too(page: Tables) -> None:
    assert row(page, "paper-table2", "anchoring_only (not run)")[1:] == [
        "+ Exploration Anchoring only",
        "0.35",
        "–",
        "0.19",
        "–",
        "–",
        "–",
        "61.7",
    ]
    assert row(page, "paper-table2", "weak_prior_vanilla")[1:6] == ["–", "–", "0.777", "–", "0.000"]
    seq = row(page, "paper-table2", "paragrpo · sequential dispatch")
    assert seq[2:] == ["–", "–", "–", "–", "0.350 [0.250, 0.450]", "0.620", "61.4"]


def test_table5_closure_rates_paper_vs_ours_in_percent(page: Tables) -> None:
    para = row(page, "paper-table5", "paragrpo")
    assert para[1] == "PARA-GRPO, step 9 | PARA-GRPO, step 19"
    assert para[2:4] == ["30.4% | 58.9%", "45.0 [40.0, 50.0]"]
    assert row(page, "paper-table5", "sft")[2:4] == ["51.8%", "40.0 [35.0, 45.0]"]
    assert row(page, "paper-table5", "(no variant of ours)")[1:4] == [
        "think prefix only, no anchor, step 9",
        "14.3%",
        "–",
    ]


def test_claims_diagnosis_and_meta(page: Tables) -> None:
    claim = row(page, "claims", "PARA-GRPO lifts f_tau over vanilla GRPO")
    assert claim[1:4] == [
        "paragrpo.f_tau = 0.41 | vanilla_grpo.f_tau = 0.13",
        "paragrpo.f_tau = 0.456 | vanilla_grpo.f_tau = 0.210",
        "yes",
    ]
    assert row(page, "claims", "removing R_tool collapses kappa")[2:] == [
        "–",
        "no",
        "not run: paragrpo_no_rtool",
    ]
    assert (
        row(page, "claims", "parallel beats sequential")[2]
        == "parallel_minus_sequential = 0.040 [-0.020, 0.100]"
    )
    assert row(page, "diagnosis", "paragrpo")[1:] == [
        "24",
        "0.958 (23/24)",
        "0.250 (6/24)",
        "0.000 (0/95)",
        "–",
        "0.167 (1/6)",
        "–",
    ]  # an older summary: no timed_right, no clean
    assert "paper-vs-ours" in page.ids
    assert {"f_tau and kappa per RL step, per variant", "accuracy vs n per mode"} <= set(page.alts)


def test_seed_band_mean_and_min_max_per_step_with_unequal_lengths() -> None:
    a = [{"step": 1, "f_tau": 0.1}, {"step": 2, "f_tau": 0.2}, {"step": 3, "f_tau": 0.3}]
    b = [
        {"step": 1, "f_tau": 0.3},
        {"step": 2, "kappa": 1.0},
        {"step": 2, "f_tau": 0.5},  # resumed: last wins
        {"step": 2, "f_tau": 0.4},
    ]
    band = seed_band([a, b], "f_tau")
    assert band.steps == (1, 2, 3)
    assert band.mean == pytest.approx((0.2, 0.3, 0.3))
    assert band.lo == pytest.approx((0.1, 0.2, 0.3))
    assert band.hi == pytest.approx((0.3, 0.4, 0.3))
    assert band.n == (2, 2, 1)
    no_step = seed_band(
        [[{"kappa": 2.0}, {"kappa": 4.0}]], "kappa"
    )  # rows without "step": 1-based position
    assert (no_step.steps, no_step.mean) == ((1, 2), (2.0, 4.0))


def test_the_repro_seed_logs_are_read_per_variant(tmp_path: Path) -> None:
    (run,) = find_runs([write_repro(tmp_path / "outer" / "repro")])  # found under a parent dir too
    assert sorted(run.logs) == ["paragrpo", "vanilla_grpo"]
    assert [len(log) for log in run.logs["vanilla_grpo"]] == [4, 3]
    band = seed_band(run.logs["vanilla_grpo"], "f_tau")
    assert band.mean[-1] == pytest.approx(0.4) and band.n[-1] == 1  # seed1 stopped at step 3


def test_accuracy_curves_are_the_full_grid_variants() -> None:
    curves = acc_curves(SUMMARY)
    assert set(curves) == {(v, m) for v in ("sft", "vanilla_grpo", "paragrpo") for m in GRID}
    assert curves[("paragrpo", "sequential")][4]["mean"] == 0.35


def test_no_section_for_a_directory_that_is_not_a_repro_run(tmp_path: Path) -> None:
    demo = fakeruns.write_demo(tmp_path / "demo", with_video=False, n=3)
    (demo / "summary.json").write_text(
        json.dumps({"variants": {}})
    )  # no "claims": not a repro summary
    t = parse(build_report([demo], tmp_path / "report.html"))
    assert "paper-vs-ours" not in t.ids and "eval" in t.ids


def test_a_broken_summary_is_a_note_not_a_crash(tmp_path: Path) -> None:
    root = write_repro(tmp_path / "repro", summary='{"variants": {"sft": ')
    text = build_report([root], tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="paper-vs-ours"' in text and "could not be read" in text
    t = parse(tmp_path / "report.html")
    assert row(t, "paper-table2", "paragrpo (not run)")[2:4] == ["0.41", "–"]
    assert "f_tau and kappa per RL step, per variant" in t.alts  # the seed logs still plot

    odd = dict(
        SUMMARY,
        variants={
            "sft": {
                "f_tau": "high",
                "eval": {"parallel": {"acc_by_n": {"4": None}}},
                "diagnosis": [1, 2],
            }
        },
        meta=None,
        claims="none",
    )
    root2 = write_repro(tmp_path / "odd", summary=odd)
    t2 = parse(build_report([root2], tmp_path / "odd.html"))
    assert row(t2, "paper-table2", "sft")[3] == "–" and "paper-vs-ours" in t2.ids


def test_iv_cell() -> None:
    assert iv_cell(iv(0.5, 0.25, 0.75), 2) == '0.50 <span class="muted">[0.25, 0.75]</span>'
    assert iv_cell({"mean": float("nan")}) == iv_cell(None) == "–"


def test_task_check_table_shows_measured_values_and_verdicts() -> None:
    from paravt.report.repro_checks import task_check_html

    tc = {
        "reference": "paragrpo",
        "overview_shows_needle": {
            "value": {"4": 0.2, "64": 1.0},
            "want": "low at n=4, 1.0 at n=64",
            "holds": True,
        },
        "subagent_recall": {
            "value": {"recall": {"rate": 0.25, "hits": 1, "of": 4}},
            "want": "recall ≥ 0.8",
            "holds": False,
        },
    }
    out = task_check_html({"task_check": tc})
    assert "reference checkpoint: paragrpo" in out
    assert "0.250" in out and "(1/4)" in out and "64: 1.000" in out
    assert out.index('class="ok">yes') < out.index(
        'class="bad">no'
    )  # needle row holds, recall row does not
    assert "at n = 64 direct answering" not in out  # a check the summary lacks is not drawn
    assert "No task check" in task_check_html({})
