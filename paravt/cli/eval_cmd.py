"""`paravt eval`: episodes on an eval set, one or several dispatch modes, results + metrics."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from paravt.config import TrainConfig
from paravt.errors import ParavtError

console = Console()


def eval_cmd(
    model: str = typer.Option(..., "--model", help="HF checkpoint dir or http(s) URL of an OpenAI-compatible server"),
    data: Path = typer.Option(..., "--data", help="eval parquet (e.g. runs/synth/eval.parquet)"),
    mode: list[str] = typer.Option(["parallel"], "--mode", help="parallel | sequential | none (repeatable)"),
    compare: bool = typer.Option(False, "--compare", help="Run all three modes on the same samples"),
    nframes: int = typer.Option(64, "--nframes", help="Overview frames"),
    out: Path = typer.Option(Path("runs/eval"), "--out"),
    limit: int | None = typer.Option(None, "--limit"),
    workers: int = typer.Option(4, "--workers"),
    max_new_tokens: int = typer.Option(512, "--max-new-tokens"),
    processor: str | None = typer.Option(None, "--processor", help="Processor dir (with a URL model)"),
    config: Path | None = typer.Option(None, "--config", help="YAML with video/rollout/reward settings"),
) -> None:
    """Evaluate; resumes by skipping finished ids in OUT/results.jsonl."""
    from paravt import config as cfgmod
    from paravt.agent import EpisodeSettings
    from paravt.eval.runner import evaluate, open_backend
    from paravt.rewards import RewardWeights
    from paravt.rl.loop import load_episode_inputs

    modes = ["parallel", "sequential", "none"] if compare else mode
    bad = [m for m in modes if m not in ("parallel", "sequential", "none")]
    if bad:
        console.print(f"[red]--mode {bad} must be parallel, sequential or none[/red]")
        raise typer.Exit(2)
    try:
        cfg = cfgmod.load(config) if config else TrainConfig()
        cfg.sampling.max_new_tokens = max_new_tokens
        samples = load_episode_inputs(data, nframes=nframes, limit=limit)
        backend = open_backend(model, processor_dir=processor, tools=cfg.rollout.tools,
                               tool_server_url=cfg.rollout.tool_server_url)
    except (ParavtError, ValueError, OSError) as err:
        console.print(f"[red]{err}[/red]")
        raise typer.Exit(2) from None
    settings = EpisodeSettings.from_config(cfg, temperature=cfg.eval.temperature)
    metrics = evaluate(samples, backend, settings, modes=modes, out=out, workers=workers,
                       weights=RewardWeights.from_config(cfg.reward))
    print_modes_table(metrics, modes)
    console.print(f"results: {out}/results.jsonl   metrics: {out}/metrics.json")


def print_modes_table(metrics: dict, modes: list[str], title: str = "eval") -> None:
    by_mode = metrics.get("by_mode", {})
    t = Table(title=title)
    for col in ("mode", "n", "score", "MCQ acc", "mIoU", "R@0.5", "F1", "calls", "tokens in", "latency s"):
        t.add_column(col)
    for m in modes:
        d = by_mode.get(m, {}).get("summary", {})
        tok = d.get("tokens", {}).get("total_input")
        t.add_row(m, *(_fmt(d.get(k)) for k in ("n", "score", "mcq_acc", "tvg_miou", "tvg_r@0.5", "oe_f1",
                                                 "mean_calls")), _fmt(tok), _fmt(d.get("latency_s")))
    console.print(t)


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if isinstance(v, float) else str(v)
