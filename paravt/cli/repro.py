"""`paravt repro [--quick] [--seeds N] [--variants a,b] [--out DIR] [--set a.b=v]`
(docs/repro.md)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from paravt.cli.output import SET_HELP, stdout_console
from paravt.errors import ConfigError


def repro(
    out: Path = typer.Option(Path("runs/repro"), "--out"),
    quick: bool = typer.Option(
        False, "--quick", help="The quick preset (1 seed intended; fewer steps)."
    ),
    preset: str = typer.Option(
        "", "--preset", help="micro | demo | quick | science | full (overrides --quick)."
    ),
    seeds: int = typer.Option(
        0, "--seeds", min=0, help="Seeds per variant (0 = 3 for full, else 1)."
    ),
    variants: str = typer.Option("", "--variants", help="Comma list (default: every variant)."),
    eval_limit: int = typer.Option(
        0, "--eval-limit", min=0, help="Held-out questions per n (0 = all)."
    ),
    set_: list[str] = typer.Option(
        None,
        "--set",
        help=SET_HELP + " Applied to the preset's config "
        "(e.g. model.device=cuda model.replicas=1 on a GPU).",
    ),
) -> None:
    """The paper's Table 2 variants from one cold start, with intervals over seeds →
    DIR/summary.json."""
    from paravt.repro.presets import PRESETS
    from paravt.repro.run import run_repro
    from paravt.repro.table import print_summary

    name = preset or ("quick" if quick else "full")
    if name not in PRESETS:
        raise ConfigError(f"--preset {name!r} is not a preset; choose from {', '.join(PRESETS)}")
    path = run_repro(
        out,
        preset=name,
        seeds=seeds or (3 if name == "full" else 1),
        variants=variants or None,
        eval_limit=eval_limit or None,
        overrides=set_ or (),
    )
    print_summary(json.loads(path.read_text()), stdout_console())
