"""`paravt data synth|check|convert|import|prefilter|bench`: thin commands over `paravt.data`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from paravt.cli.checks import output_dir
from paravt.cli.distill import distill_cmd
from paravt.cli.output import stdout_console
from paravt.config import Flag, TrainConfig, resolve
from paravt.errors import ConfigError
from paravt.eval.benchmarks.registry import benchmark_names

app = typer.Typer(help="Build, check and convert datasets.", no_args_is_help=True)
console = stdout_console()
MAX_ROW_BYTES: int = TrainConfig.model_fields["max_row_bytes"].default  # written once, in config


@app.command("synth")
def synth(
    out: str = typer.Option(
        ..., "--out", help="Output directory (videos/, *.parquet, manifest.json)."
    ),
    videos: int = typer.Option(200, "--videos", min=1, help="Training videos (SFT and the base)."),
    rl_videos: int | None = typer.Option(
        None,
        "--rl-videos",
        min=1,
        help="The RL prompts' own videos, disjoint from the training ones (default: a quarter "
        "of --videos).",
    ),
    tool_share: float | None = typer.Option(
        None,
        "--tool-share",
        min=0.0,
        max=1.0,
        help="Share of tool traces among the SFT main traces (default: the paper's mix, "
        "paravt.data.synth.sft_mix.TOOL_SHARE).",
    ),
    eval_videos: int = typer.Option(
        40, "--eval-videos", min=1, help="Evaluation videos (disjoint from training)."
    ),
    seed: int = typer.Option(0, "--seed"),
    workers: int = typer.Option(2, "--workers", min=1, help="Processes writing videos."),
    needle_kinds: str = typer.Option(
        "flash,digit,shape",
        "--needle-kinds",
        help="Needles to draw, comma-separated (flash, digit, shape).",
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Build ParaVT-Synth (docs/ARCHITECTURE.md §9)."""
    from paravt.data.synth.build import SceneSpec, build
    from paravt.data.synth.sft_mix import TOOL_SHARE

    kinds = tuple(k.strip() for k in needle_kinds.split(",") if k.strip())
    m = build(
        output_dir(out),
        videos=videos,
        rl_videos=rl_videos,
        eval_videos=eval_videos,
        seed=seed,
        workers=workers,
        tool_share=TOOL_SHARE if tool_share is None else tool_share,
        scenes=SceneSpec(needle_kinds=kinds),
    )
    if as_json:
        typer.echo(m.to_json())
        return
    _print_manifest(out, m)


def _print_manifest(out: str, m: Any) -> None:
    """The build's counts and its needle table (``paravt data synth`` without --json)."""
    console.print(
        f"[green]wrote {out}[/green] in {m.timing_s['total']:.1f} s (videos "
        f"{m.timing_s['videos']:.1f} s)"
    )
    console.print(
        f"sft {m.counts['sft_total']} rows {m.counts['sft']} (tool share "
        f"{m.counts['sft_mix']['measured_tool_share']}), rl {m.counts['rl']} on "
        f"{m.counts['videos']['rl']} videos of their own, eval {m.counts['eval']}"
    )
    t = Table("n", "tool necessary (train)", "tool necessary (eval)", "≈ 1 − n·len/D (train)")
    for n, v in m.needle["train_prompts"].items():
        t.add_row(
            n,
            f"{v['tool_necessary_share']:.3f}",
            f"{m.needle['eval_prompts'][n]['tool_necessary_share'] or 0:.3f}",
            f"{1 - v['approx_catch_prob']:.3f}",
        )
    console.print(t)


@app.command("check")
def check(
    file: str = typer.Argument(..., help="Parquet of rows (our schema)."),
    k_max: int = typer.Option(8, "--k-max", min=1),
    root: str | None = typer.Option(
        None, "--root", help="Data root of the videos (default: the parquet's directory)."
    ),
    max_row_bytes: int = typer.Option(
        MAX_ROW_BYTES, "--max-row-bytes", min=1024, help="Largest row (config max_row_bytes)."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Check traces against the strict rules (paravt.data.check) and every row's data and videos
    (paravt.data.screen: each video probed once); exit 1 if any row fails, 2 if none is usable."""
    from paravt.data.check import check_rows, duplicates_line
    from paravt.data.screen import screen_rows

    screened = screen_rows(file, root, max_row_bytes=max_row_bytes, warn=False)
    report = check_rows(screened.rows, k_max=k_max, errors=screened.errors)
    if twice := duplicates_line(file, report):
        typer.echo(twice, err=True)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "file": str(file),
                    "rows": report.rows,
                    "failed_rows": report.failed_rows,
                    "by_rule": report.by_rule,
                    "violations": [v.__dict__ for v in report.violations],
                }
            )
        )
    else:
        if report.violations:
            t = Table("row", "rule", "detail")
            for v in report.violations[:200]:
                t.add_row(v.row, v.rule, v.detail)
            console.print(t)
        console.print(
            f"{file}: {report.rows} rows, {report.failed_rows} failed; violations by rule: "
            f"{report.by_rule or 'none'}"
        )
    if not report.ok:
        raise typer.Exit(1)


@app.command("convert")
def convert(
    inp: str = typer.Option(..., "--in"),
    out: str = typer.Option(..., "--out"),
    k_max: int = typer.Option(8, "--k-max", min=1),
    adjacent_tol: float = typer.Option(
        1.0, "--adjacent-tol", min=0.0, help="Seconds within which windows count as adjacent."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Merge independent sequential crop calls into parallel turns (paravt.data.convert)."""
    from paravt.data.convert import convert_rows
    from paravt.data.schema import read_rows, write_rows

    rows, stats = convert_rows(read_rows(inp), k_max=k_max, adjacent_tol_s=adjacent_tol)
    write_rows(out, rows)
    facts = {
        "rows": stats.rows,
        "converted": stats.converted,
        "skipped": stats.skipped,
        "calls": stats.calls,
        "calls_per_turn_before": round(stats.calls_per_turn_before, 3),
        "calls_per_turn_after": round(stats.calls_per_turn_after, 3),
        "merges": stats.merges,
        "refused": stats.refused,
    }
    if as_json:
        typer.echo(json.dumps(facts))
        return
    t = Table("statistic", "value")
    for k, v in facts.items():
        t.add_row(k, str(v))
    console.print(t)


@app.command("import")
def import_cmd(
    root: str = typer.Option(..., "--root", help="Where the release's media were extracted."),
    inp: list[str] = typer.Option(..., "--in", help="Release parquet(s); repeat --in."),
    out: str = typer.Option(..., "--out", help="Output directory."),
    nframes: int | None = typer.Option(
        None,
        "--nframes",
        help="Overview frame budget of each whole-video item: sets video.overview_nframes "
        "(default: its default).",
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Import the ParaVT authors' released parquets (paravt.data.authors); reports missing media."""
    from paravt.data.authors import import_files

    budget = resolve(
        TrainConfig,
        {},
        "paravt data import",
        flags=[Flag("--nframes", "video.overview_nframes", nframes)],
    ).video.overview_nframes
    if budget == 0:
        raise ConfigError(
            "--nframes 0: a whole-video item needs at least one frame; pass --nframes N ≥ 1"
        )
    reports = import_files(inp, root=root, out_dir=out, nframes=budget)

    if as_json:
        typer.echo(json.dumps([r.__dict__ for r in reports], default=list))
        return
    for r in reports:
        console.print(
            f"{r.source} ({r.layout}): {r.rows_in} rows → {r.rows_out} in {r.out}; "
            f"missing media {len(r.missing)}, unsupported {r.unsupported or 0}"
        )
        for i, p in r.missing[:20]:
            console.print(f"  [yellow]row {i}: missing {p}[/yellow]")


@app.command("prefilter")
def prefilter_cmd(
    inp: str = typer.Option(..., "--in", help="rl.parquet"),
    out: str = typer.Option(
        ..., "--out", help="Filtered parquet; a report JSON is written next to it."
    ),
    model: str | None = typer.Option(
        None, "--model", help="Checkpoint for the all-G-wrong rule (omit: answer-length rule only)."
    ),
    g: int = typer.Option(8, "--g", min=1, help="Rollouts per prompt."),
    root: str | None = typer.Option(
        None, "--root", help="Data root (default: the input's directory)."
    ),
    temperature: float = typer.Option(0.7, "--temperature", min=0.0),
) -> None:
    """DAPO pre-filter (paravt.rl.prefilter)."""
    import asyncio

    from paravt.data.schema import read_rows, write_rows
    from paravt.rl.prefilter import prefilter, rollout_accuracies

    rows = read_rows(inp)
    accs = None
    if model is not None:
        from paravt.agent import EpisodeSettings
        from paravt.models.base import SamplingParams
        from paravt.models.chat import ChatCodec
        from paravt.models.hf.generator import HFGenerator
        from paravt.models.hf.loading import load_policy

        policy = load_policy(model)
        settings = EpisodeSettings(sampling=SamplingParams(temperature=temperature))
        accs = asyncio.run(
            rollout_accuracies(
                rows,
                root or str(Path(inp).parent),
                generator=HFGenerator(policy),
                codec=ChatCodec(policy.processor),
                settings=settings,
                g=g,
            )
        )
    kept, report = prefilter(rows, accs)
    write_rows(out, kept)
    report_path = Path(out).with_suffix(".prefilter.json")
    report_path.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    console.print(
        f"kept {len(report.kept)} of {len(rows)}; dropped by rule {report.by_rule or 'none'}; "
        f"report {report_path}"
    )


@app.command("bench")
def bench(
    name: str = typer.Argument(..., help=" | ".join(benchmark_names())),
    root: str = typer.Option(..., "--root"),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N samples."),
) -> None:
    """Load a benchmark's annotations and check its videos (paravt.eval.benchmarks)."""
    from collections import Counter

    from paravt.eval.benchmarks.registry import load_benchmark

    samples = load_benchmark(name, root, limit=limit)
    console.print(f"{name}: {len(samples)} samples, tasks {dict(Counter(s.task for s in samples))}")


# ---- distill (issue 16): cold-start traces from a teacher endpoint -------------------------------


app.command("distill")(distill_cmd)  # defined in paravt.cli.distill
