"""`paravt model tiny|info`: build an offline tiny checkpoint, describe a checkpoint."""

from __future__ import annotations

import json
from enum import StrEnum

import typer

from paravt.cli.output import stdout_console

app = typer.Typer(help="Build and inspect model checkpoints.", no_args_is_help=True)
console = stdout_console()


class FamilyOpt(StrEnum):
    qwen2_5_vl = "qwen2_5_vl"
    qwen3_vl = "qwen3_vl"


class SizeOpt(StrEnum):
    xs = "xs"
    s = "s"
    m = "m"


@app.command("tiny")
def tiny(
    out: str = typer.Option(..., "--out", help="Directory to write the checkpoint to."),
    family: FamilyOpt = typer.Option(FamilyOpt.qwen3_vl, "--family"),
    size: SizeOpt = typer.Option(
        SizeOpt.s, "--size", help="xs ≈ hidden 64/2 layers, s ≈ 128/4, m ≈ 256/4."
    ),
    seed: int = typer.Option(0, "--seed"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Build a randomly initialised tiny Qwen-VL model + tokenizer + processor, fully offline."""
    from paravt.data.synth.corpus import protocol_corpus
    from paravt.models.tiny import build_tiny

    built = build_tiny(family.value, size.value, out, corpus=protocol_corpus(seed=seed), seed=seed)
    if as_json:
        typer.echo(json.dumps(built.__dict__))
        return
    console.print(
        f"[green]wrote {built.family}/{built.size} to {built.path}[/green]: "
        f"{built.num_params:,} parameters, vocab {built.vocab_size}"
    )


@app.command("info")
def info(
    path: str = typer.Argument(..., help="Checkpoint directory or cached hub id."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Print family, parameter count and vocabulary size of a checkpoint."""
    from paravt.models.hf.loading import load_policy

    policy = load_policy(path)
    facts = {
        "path": path,
        "family": policy.family,
        "num_params": sum(p.numel() for p in policy.model.parameters()),
        "vocab_size": len(policy.tokenizer),
    }
    if as_json:
        typer.echo(json.dumps(facts))
        return
    for k, v in facts.items():
        console.print(f"{k}: {v}")


if __name__ == "__main__":  # pragma: no cover - `python -m paravt.cli.model`
    app()
