"""`paravt train prior|sft|rl --config C.yaml [--resume] [--set key=value ...]`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from paravt import config as cfgmod
from paravt.cli.checks import model_source
from paravt.cli.output import SET_HELP, stdout_console

if TYPE_CHECKING:
    from paravt.rl.registry import Kind

app = typer.Typer(help="SFT cold start and PARA-GRPO training.", no_args_is_help=True)
console = stdout_console()


@app.command("prior")
def prior(
    config: Path = typer.Option(..., "--config", "-c"),
    resume: bool = typer.Option(False, "--resume"),
    set_: list[str] = typer.Option(None, "--set", help=SET_HELP),
) -> None:
    """Simulated pretrained tool prior: SFT on pretraining-style traces built from `data`
    (rl.parquet)
    before the cold start; strength = prior.steps and prior.tool_mix (0 = weak prior)."""
    _train(cfgmod.load(config, overrides=set_), "prior", resume)


@app.command("sft")
def sft(
    config: Path = typer.Option(..., "--config", "-c"),
    resume: bool = typer.Option(False, "--resume"),
    set_: list[str] = typer.Option(None, "--set", help=SET_HELP),
) -> None:
    """Supervised cold start on parquet traces (loss on assistant tokens only)."""
    _train(cfgmod.load(config, overrides=set_), "sft", resume)


@app.command("rl")
def rl(
    config: Path = typer.Option(..., "--config", "-c"),
    resume: bool = typer.Option(False, "--resume"),
    engine: str | None = typer.Option(
        None, "--engine", help="local | verl (default: rl.engine; refused unless one of them)"
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="verl: print the resolved config and command"
    ),
    set_: list[str] = typer.Option(None, "--set", help=SET_HELP),
) -> None:
    """PARA-GRPO: single-process (engine local) or on verl (engine verl)."""
    cfg: cfgmod.TrainConfig = cfgmod.load(
        config, overrides=set_, flags=[cfgmod.Flag("--engine", "rl.engine", engine)]
    )
    if cfg.rl.engine == "verl":
        from paravt.cli.train_verl import launch_verl

        if not dry_run:
            _check_inputs(cfg)
        raise typer.Exit(launch_verl(cfg, dry_run=dry_run))
    _train(cfg, "rl", resume)


def _check_inputs(cfg: cfgmod.TrainConfig) -> None:
    """A missing or non-parquet ``data`` file, a missing model and a listed tracker whose package is
    missing are refused before a model loads."""
    from paravt.data.schema import check_dataset
    from paravt.tracking import require_all

    check_dataset(cfg.data)
    require_all(cfg.logging.loggers)
    model_source(cfg.init_from or cfg.model.path, "init_from" if cfg.init_from else "model.path")


def _train(cfg: cfgmod.TrainConfig, kind: Kind, resume: bool) -> None:
    _check_inputs(cfg)
    from paravt.rl.loop import run_training  # torch: once the inputs are known to be good

    out = run_training(cfg, kind=kind, resume=resume)
    console.print(f"[green]{kind} done[/green]: {out}/model  (log: {out}/train_log.jsonl)")
