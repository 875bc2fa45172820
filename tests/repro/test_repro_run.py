"""`paravt repro` end to end on the micro preset (1 seed, 2 variants, 1–2 steps per stage, 2
held-out questions; ~15 s): the summary follows the issue's contract and its numbers are the
ones the run's own logs, probes and eval results give."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest
from typer.testing import CliRunner

from paravt.cli import app
from paravt.eval.results import load_results
from paravt.jsonl import read_jsonl as read_log
from paravt.repro.select import pick_early
from paravt.repro.summary import tail_means

#: the run's one MLflow store, when mlflow is installed (the `tracking` extra)
TRACKED = ("--set", "logging.loggers=[console,mlflow]") if find_spec("mlflow") else ()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, mlflow_store: Callable[[Path], Path]) -> Path:
    out = Path(tmp_path_factory.mktemp("repro"))
    mlflow_store(out / "mlruns" / "mlflow.db")  # the run's one store (seeded: no migrations)
    res = CliRunner().invoke(
        app,
        [
            "repro",
            "--preset",
            "micro",
            "--seeds",
            "1",
            "--variants",
            "sft,vanilla_grpo",
            "--eval-limit",
            "2",
            "--out",
            str(out),
            *TRACKED,
        ],
    )
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def summary(run: Path) -> dict[str, Any]:
    return json.loads((run / "summary.json").read_text())


def test_summary_has_the_contract_keys(summary: dict[str, Any]) -> None:
    assert set(summary["variants"]) == {"sft", "vanilla_grpo"}
    for v in summary["variants"].values():
        for key in ("f_tau", "kappa", "tool_code_rate", "skip_tool_rate"):
            assert set(v[key]) >= {"mean", "lo", "hi"}
        assert set(v["closure"]) == {"think", "tool_call", "answer"}
        for block in v["eval"].values():
            assert set(block["acc_by_n"]) == {"4", "64"}
            assert "acc_necessary" in block and "acc_unnecessary" in block
    assert set(summary["variants"]["sft"]["eval"]) == {
        "parallel",
        "sequential",
        "none",
    }  # the full grid
    for v in summary["variants"].values():
        assert set(v["diagnosis"]) == {
            "episodes_with_windows",
            "coverage",
            "recall",
            "false_reports",
            "timed_right",
            "acc_given_report",
            "clean",
        }
    assert isinstance(summary["sft_emits_think_without_prefix"], float)
    assert summary["task_check"]["reference"] == "sft"  # the first full-grid variant that ran
    assert summary["task_check"]["overview_shows_needle"]["value"]["64"] == 1.0
    assert set(summary["meta"]["stage_s"]) >= {"synth", "prior_strong", "sft_strong"}
    stage_checks = {
        "base_clip_recall",
        "base_clip_timed_right",
        "base_clip_false_reports",
        "base_overview_mcq_at_64",
        "base_overview_mcq_at_4",
        "cold_start_closure",
        "cold_start_tool_code",
    }
    for key in stage_checks:  # measured in every preset (micro's numbers are noise)
        assert set(summary["task_check"][key]) == {"value", "want", "holds"}
        assert isinstance(summary["task_check"][key]["holds"], bool)
    assert len(summary["claims"]) == 8
    for c in summary["claims"]:
        assert set(c) >= {"claim", "paper", "ours", "holds"} and isinstance(c["holds"], bool)


def test_numbers_come_from_the_run(run: Path, summary: dict[str, Any]) -> None:
    log = read_log(run / "vanilla_grpo" / "seed0" / "train_log.jsonl")
    assert summary["variants"]["vanilla_grpo"]["f_tau"]["mean"] == pytest.approx(
        tail_means(log)["f_tau"]
    )
    assert summary["variants"]["vanilla_grpo"]["kappa"]["mean"] == pytest.approx(
        tail_means(log)["kappa"]
    )
    probe = json.loads((run / "sft" / "seed0" / "probe.json").read_text())
    assert summary["variants"]["sft"]["skip_tool_rate"]["mean"] == pytest.approx(
        probe["skip_tool_rate"]
    )
    rows = [
        r
        for r in load_results(run / "sft" / "seed0" / "eval_n4" / "results.jsonl")
        if r.mode == "sequential"
    ]
    assert summary["variants"]["sft"]["eval"]["sequential"]["acc_by_n"]["4"][
        "mean"
    ] == pytest.approx(fmean(r.score for r in rows))
    collapse = summary["claims"][0]
    assert collapse["ours"]["sft.kappa"] == summary["variants"]["sft"]["kappa"]["mean"]
    assert collapse["paper"] == {"sft.kappa": 2.5, "vanilla_grpo.kappa": 0.02}
    assert summary["claims"][4]["note"].startswith("not run")  # paragrpo_no_rtool was not asked for


def test_the_rl_init_is_the_measured_early_checkpoint(run: Path, summary: dict[str, Any]) -> None:
    sel = json.loads((run / "sft_strong" / "selection.json").read_text())
    steps = [c["step"] for c in sel["candidates"]]
    assert steps == [1, 2]  # the step-1 checkpoint and the final model
    assert sel["chosen_step"] == pick_early(
        [(c["step"], c["score"]) for c in sel["candidates"]], tolerance=sel["tolerance"]
    )
    assert summary["sft_emits_think_without_prefix"] == next(
        c["metrics"]["closed/think"] for c in sel["candidates"] if c["step"] == sel["chosen_step"]
    )


def test_the_reward_by_path_table_is_the_probes_rollouts(
    run: Path, summary: dict[str, Any]
) -> None:
    """The RL init's reward by path (issue 47 M3): one table per (variant, budget), rebuilt here
    from the probe's raw rollouts (path shares, mean reward per path)."""
    by_path = summary["reward_by_path"]
    assert set(by_path) == {"vanilla_grpo", "paragrpo"} and set(by_path["paragrpo"]) == {"4", "64"}
    raw = read_log(run / "sft_strong" / "paths" / "rollouts.jsonl")
    assert len(raw) == 2 * 2 * 2  # 2 variants × 2 budgets × (1 prompt × G = 2)
    for variant, by_n in by_path.items():
        for n, table in by_n.items():
            cell = [r for r in raw if r["variant"] == variant and str(r["n"]) == n]
            assert table["n"] == len(cell) == 2
            assert sum(p["share"] for p in table["paths"].values()) == pytest.approx(1.0)
            for path, block in table["paths"].items():
                rewards = [r["reward"] for r in cell if r["path"] == path]
                assert block["n"] == len(rewards)
                if rewards:
                    assert block["reward"]["mean"] == pytest.approx(fmean(rewards))
    # each row carries the reward's terms: R_acc among them, the row's own accuracy
    assert all(r["terms"]["acc"] == r["acc"] and "format_base" in r["format_parts"] for r in raw)
    # the vanilla cell is rolled out without the think prefix, PARA-GRPO's with it
    assert all(r["completion"].startswith("<think>") for r in raw if r["variant"] == "paragrpo")
    # what the tools returned travels with each rollout (the reports its answer turn read): a
    # list on every row, empty where no call was written
    assert all(isinstance(r["calls"], list) for r in raw)
    assert not any(r["calls"] for r in raw if r["path"] in ("direct", "broken"))


def test_a_second_run_resumes_and_skips_every_stage(run: Path, summary: dict[str, Any]) -> None:
    files = [
        run / "vanilla_grpo" / "seed0" / "train_log.jsonl",
        run / "sft" / "seed0" / "eval_n64" / "results.jsonl",
    ]
    before = [f.read_text() for f in files]
    res = CliRunner().invoke(
        app,
        [
            "repro",
            "--preset",
            "micro",
            "--variants",
            "sft,vanilla_grpo",
            "--eval-limit",
            "2",
            "--out",
            str(run),
            *TRACKED,
        ],
    )
    assert res.exit_code == 0, res.output
    assert res.output.count("skipped") >= 8
    assert [f.read_text() for f in files] == before  # no step logged, no episode run again
    again = json.loads((run / "summary.json").read_text())
    assert again["variants"] == summary["variants"] and again["claims"] == summary["claims"]


def test_the_report_puts_the_run_beside_the_paper(run: Path, summary: dict[str, Any]) -> None:
    from paravt.report.page import build_report

    text = re.sub(
        r"<td[^>]*>", "<td>", build_report([run], run / "report.html").read_text(encoding="utf-8")
    )
    assert 'id="paper-vs-ours"' in text and "could not" not in text
    van = summary["variants"]["vanilla_grpo"]
    # vanilla's row: the paper's f_tau 0.13 and κ 0.02 beside our measured means (one seed: no
    # interval)
    assert (
        f"<td>0.13</td><td>{van['f_tau']['mean']:.3f}</td><td>0.02</td><td>{van['kappa']['mean']:.3f}</td>"
        in text
    )
    assert (
        'alt="f_tau and kappa per RL step, per variant"' in text
        and 'alt="accuracy vs n per mode"' in text
    )
    assert "anchoring_only (not run)" in text
    # the RL init's reward by path: its figure, and a table row per (variant, n, path)
    assert 'alt="reward by path"' in text
    n64 = summary["reward_by_path"]["vanilla_grpo"]["64"]["paths"]["direct"]
    assert (
        f"<td>vanilla_grpo</td><td>64</td><td>direct</td><td>{n64['share']:.3f} ({n64['n']})"
        in text
    )
    assert "vanilla_grpo n=64: executed − direct advantage" in text
    assert "wrote a call − wrote none" in text  # the call decision's contrast, beside it


def test_unknown_variant_is_a_clear_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app, ["repro", "--preset", "micro", "--variants", "sft,nope", "--out", str(tmp_path)]
    )
    assert res.exit_code == 2 and "unknown variant" in res.output


def test_rl_trains_on_the_offline_filters_prompts(run: Path, summary: dict[str, Any]) -> None:
    """rl.filter offline (issue 38): the DAPO filter ran ONCE on the chosen cold start over the RL
    pool (the RL videos' 3 prompts, G rollouts each), and the RL run read its output; with a noise
    model every group is all-wrong, so the run keeps the pool and says so."""
    import yaml

    from paravt.config import RUN_CONFIG
    from paravt.data.schema import read_rows

    rep = summary["selection"]["strong"]["prefilter"]
    d = run / "sft_strong" / "prefilter"
    assert rep == json.loads((d / "prefilter.json").read_text())
    assert rep["filter"] == "offline" and rep["pool"] == 3 and rep["g"] == 2
    assert rep["kept"] + rep["dropped"] == 3 and sum(rep["by_rule"].values()) == rep["dropped"]
    kept = read_rows(d / "rl.parquet")
    assert len(kept) == (3 if rep["fallback"] else rep["kept"]) >= 1
    assert all(v.startswith("videos/rl/") for r in kept for v in r.videos)
    cfg = yaml.safe_load((run / "vanilla_grpo" / "seed0" / "model" / RUN_CONFIG).read_text())
    assert cfg["data"] == str(d / "rl.parquet") and cfg["rl"]["filter"] == "offline"


def test_one_mlflow_store_holds_every_stage_eval_and_the_summary(
    run: Path, summary: dict[str, Any]
) -> None:
    """Read back with MlflowClient: every training stage, every eval and ONE summary run (the
    second invocation above skipped every stage and logged nothing again), all in the group,
    each tagged with its kind, variant, seed and commit, each eval nested under its training
    run, the report an artifact of the summary run."""
    mlflow = pytest.importorskip("mlflow")
    client = mlflow.MlflowClient(f"sqlite:///{run / 'mlruns' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("paravt").experiment_id])
    names = sorted(r.info.run_name for r in runs)
    evals = sorted(
        f"{p.parent.parent.name}/{p.parent.name}/{p.name}" for p in run.glob("*/seed*/eval_n*")
    )
    assert evals and set(evals) <= set(names)
    assert {"sft_strong", "vanilla_grpo/seed0", "summary"} <= set(names)
    assert any(n.startswith("prior_strong/") for n in names)
    assert len(names) == len(set(names)), names  # nothing logged twice
    assert {r.data.tags.get("paravt.group") for r in runs} == {run.name}
    (s,) = [r for r in runs if r.info.run_name == "summary"]
    assert s.data.metrics["claims/total"] == len(summary["claims"])
    assert s.data.metrics["claims/held"] == sum(c["holds"] for c in summary["claims"])
    tables = {a.path for a in client.list_artifacts(s.info.run_id)}
    assert {"claims.json", "stage_checks.json", "variants.json"} <= tables
    path = client.download_artifacts(s.info.run_id, "variants.json", str(run / "dl"))
    variants = json.loads(Path(path).read_text())
    rows = {r[variants["columns"].index("variant")] for r in variants["data"]}
    assert rows == set(summary["variants"])
    # issue 49 item 2: what each run is, evals nested under their training run, the report
    by_name = {r.info.run_name: r for r in runs}
    kinds = {n: r.data.tags.get("paravt.kind") for n, r in by_name.items()}
    assert {kinds["sft_strong"], kinds["vanilla_grpo/seed0"], kinds["summary"]} == {
        "sft",
        "rl",
        "summary",
    }
    assert {k for n, k in kinds.items() if n.startswith("prior_strong/")} == {"base"}
    assert all(kinds[e] == "eval" for e in evals)
    tags = by_name["vanilla_grpo/seed0"].data.tags
    assert (tags["paravt.variant"], tags["paravt.seed"]) == ("vanilla_grpo", "0")
    assert len(tags.get("mlflow.source.git.commit", "x" * 40)) == 40
    for e in evals:  # the RL seed's run, or the cold start's for the sft variant
        trained = "sft_strong" if e.startswith("sft/") else e.rsplit("/", 1)[0]
        assert by_name[e].data.tags["mlflow.parentRunId"] == by_name[trained].info.run_id, e
        assert by_name[e].data.tags["paravt.variant"] == e.split("/")[0]
    assert "report.html" in tables  # the summary run's artifact: paravt report's page
    page = client.download_artifacts(s.info.run_id, "report.html", str(run / "dl"))
    assert 'id="paper-vs-ours"' in Path(page).read_text(encoding="utf-8")
