"""`paravt eval`: episodes on an eval set, one or several dispatch modes, results + metrics."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from paravt.config import TrainConfig
from paravt.errors import ParavtError
from paravt.cli.output import fail, stdout_console

console = stdout_console()


def eval_cmd(
    model: str = typer.Option(..., "--model", help="HF checkpoint dir or http(s) URL of an OpenAI-compatible server"),
    data: Path = typer.Option(..., "--data", help="eval parquet (e.g. runs/synth/eval.parquet)"),
    mode: list[str] = typer.Option(None, "--mode", help="parallel | sequential | none (repeatable; default eval.modes)"),
    compare: bool = typer.Option(False, "--compare", help="Run all three modes on the same samples"),
    nframes: int | None = typer.Option(None, "--nframes", help="Overview frames (default eval.nframes)"),
    out: Path = typer.Option(Path("runs/eval"), "--out"),
    limit: int | None = typer.Option(None, "--limit", help="First N samples (default eval.limit)"),
    workers: int | None = typer.Option(None, "--workers", help="Concurrent episodes (default eval.workers)"),
    max_new_tokens: int | None = typer.Option(None, "--max-new-tokens", help="Per main turn (default sampling.max_new_tokens)"),
    processor: str | None = typer.Option(None, "--processor", help="Processor dir (with a URL model)"),
    config: Path | None = typer.Option(None, "--config", help="YAML: model/video/rollout/reward/eval settings"),
) -> None:
    """Evaluate; resumes by skipping finished ids in OUT/results.jsonl. Flags override the config."""
    from paravt import config as cfgmod
    from paravt.agent import EpisodeSettings
    from paravt.eval.runner import evaluate, open_backend
    from paravt.rewards import RewardWeights
    from paravt.rl.loop import load_episode_inputs

    try:
        cfg = cfgmod.load(config) if config else TrainConfig()
    except ParavtError as err:
        raise fail(str(err)) from None
    ev, m = cfg.eval, cfg.model
    modes = ["parallel", "sequential", "none"] if compare else (mode or list(ev.modes))
    bad = [x for x in modes if x not in ("parallel", "sequential", "none")]
    if bad:
        raise fail(f"--mode {bad} must be parallel, sequential or none") from None
    if max_new_tokens is not None:
        cfg.sampling.max_new_tokens = max_new_tokens
    try:
        samples = load_episode_inputs(data, nframes=ev.nframes if nframes is None else nframes,
                                      limit=limit or ev.limit)
        backend = open_backend(model, processor_dir=processor, device=m.device, tools=cfg.rollout.tools,
                               tool_server_url=cfg.rollout.tool_server_url, timeout_s=m.request_timeout_s,
                               max_retries=m.max_retries, max_concurrency=m.max_concurrency,
                               served_model_name=m.served_model_name,
                               python_weak_isolation=cfg.rollout.python_weak_isolation)
    except (ParavtError, ValueError, OSError) as err:
        raise fail(str(err)) from None
    r = cfg.reward
    backend.judge_url, backend.judge_model, backend.judge_timeout_s = r.judge_url, r.judge_model, r.judge_timeout_s
    settings = EpisodeSettings.from_config(cfg, temperature=ev.temperature)
    metrics = evaluate(samples, backend, settings, modes=modes, out=out, workers=workers or ev.workers,
                       weights=RewardWeights.from_config(r))
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
