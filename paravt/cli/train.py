"""`paravt train prior|sft|rl --config C.yaml [--resume] [--set key=value ...]`."""

from __future__ import annotations

from pathlib import Path

import typer

from paravt import config as cfgmod
from paravt.cli.output import fail, stdout_console
from paravt.errors import ParavtError

app = typer.Typer(help="SFT cold start and PARA-GRPO training.", no_args_is_help=True)
console = stdout_console()


def _load(config: Path, overrides: list[str] | None) -> cfgmod.TrainConfig:
    try:
        return cfgmod.load(config, overrides=overrides or [])
    except ParavtError as err:
        raise fail(str(err)) from None


@app.command("prior")
def prior(config: Path = typer.Option(..., "--config", "-c"), resume: bool = typer.Option(False, "--resume"),
          set_: list[str] = typer.Option(None, "--set", help="Override a field: key.sub=value")) -> None:
    """Simulated pretrained tool prior: SFT on pretraining-style traces built from `data` (rl.parquet)
    before the cold start; strength = prior.steps and prior.tool_mix (0 = weak prior)."""
    from paravt.rl.loop import run_training

    cfg = _load(config, set_)
    out = run_training(cfg, kind="prior", resume=resume)
    console.print(f"[green]prior done[/green]: {out}/model  (log: {out}/train_log.jsonl)")


@app.command("sft")
def sft(config: Path = typer.Option(..., "--config", "-c"), resume: bool = typer.Option(False, "--resume"),
        set_: list[str] = typer.Option(None, "--set", help="Override a field: key.sub=value")) -> None:
    """Supervised cold start on parquet traces (loss on assistant tokens only)."""
    from paravt.rl.loop import run_training

    cfg = _load(config, set_)
    out = run_training(cfg, kind="sft", resume=resume)
    console.print(f"[green]SFT done[/green]: {out}/model  (log: {out}/train_log.jsonl)")


@app.command("rl")
def rl(config: Path = typer.Option(..., "--config", "-c"), resume: bool = typer.Option(False, "--resume"),
       engine: str | None = typer.Option(None, "--engine", help="local | verl (default: rl.engine)"),
       dry_run: bool = typer.Option(False, "--dry-run", help="verl: print the resolved config and command"),
       set_: list[str] = typer.Option(None, "--set", help="Override a field: key.sub=value")) -> None:
    """PARA-GRPO: single-process (engine local) or on verl (engine verl)."""
    cfg = _load(config, set_)
    if engine:
        cfg.rl.engine = engine  # type: ignore[assignment]
    if cfg.rl.engine == "verl":
        from paravt.cli.train_verl import launch_verl

        raise typer.Exit(launch_verl(cfg, dry_run=dry_run))
    from paravt.rl.loop import run_training

    out = run_training(cfg, kind="rl", resume=resume)
    console.print(f"[green]RL done[/green]: {out}/model  (log: {out}/train_log.jsonl)")
