"""`paravt repro [--quick] [--seeds N] [--variants a,b] [--base-seeds N] [--checks-only]
[--base-curve EVERY] [--out DIR] [--set a.b=v]`
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
    base_seeds: int = typer.Option(
        0,
        "--base-seeds",
        min=0,
        help="Run once per simulated base seed (prior.seed 0..N-1) into DIR/base_seedS and write "
        "DIR/checks.json: each stage check per base (0 = one run, as set).",
    ),
    checks_only: bool = typer.Option(
        False,
        "--checks-only",
        help="Stop at the cold start: base, SFT, selection, the RL init's reward by path and the "
        "sft variant's probe and eval (every stage check, no RL).",
    ),
    base_curve: int = typer.Option(
        0,
        "--base-curve",
        min=0,
        help="After the run, probe the base's checkpoints every EVERY steps with the base and "
        "habit probes, the final model's point read from the run's own probes → "
        "DIR/prior_strong/curve.json and a table (0 = no curve).",
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

    name = preset or ("quick" if quick else "full")
    if name not in PRESETS:
        raise ConfigError(f"--preset {name!r} is not a preset; choose from {', '.join(PRESETS)}")
    variants = _checks_variants(variants) if checks_only else variants
    sets = tuple(set_ or ())
    if base_seeds:
        _over_base_seeds(out, name, base_seeds, seeds, variants, eval_limit, sets)
        for s in range(base_seeds):
            _curve(out / f"base_seed{s}", name, base_curve, [*sets, f"prior.seed={s}"])
        return
    _one_run(out, name, seeds, variants, eval_limit, sets)
    _curve(out, name, base_curve, sets)


def _one_run(
    out: Path, name: str, seeds: int, variants: str, eval_limit: int, sets: tuple[str, ...]
) -> None:
    from paravt.report.summary_run import report_to_summary_run
    from paravt.repro.run import run_repro
    from paravt.repro.stages import console
    from paravt.repro.table import print_summary

    path = run_repro(
        out,
        preset=name,
        seeds=seeds or (3 if name == "full" else 1),
        variants=variants or None,
        eval_limit=eval_limit or None,
        overrides=sets,
    )
    report_to_summary_run(out, console)
    print_summary(json.loads(path.read_text()), stdout_console())


def _curve(out: Path, preset: str, every: int, overrides: list[str] | tuple[str, ...]) -> None:
    """``--base-curve EVERY``: the learning curve of the run's strong base (0: none)."""
    if not every:
        return
    from paravt.repro.base_curve import base_curve, curve_rows
    from paravt.repro.presets import PRESETS, base_config, with_config_overrides
    from paravt.repro.table import curve_table

    p = PRESETS[preset]
    cfg = with_config_overrides(base_config(out, p), overrides)
    path = base_curve(out, cfg, p, every=every)
    rows = curve_rows(json.loads(path.read_text()))
    stdout_console().print(curve_table(rows, f"the base's learning curve ({out})"))
    stdout_console().print(f"curve: {path}", soft_wrap=True)


def _checks_variants(variants: str) -> str:
    """``--checks-only``: the ``sft`` variant alone (no RL); another variant is refused."""
    from paravt.repro.base_seeds import CHECKS_ONLY_VARIANTS

    if variants and variants != CHECKS_ONLY_VARIANTS:
        raise ConfigError(
            f"--checks-only runs the {CHECKS_ONLY_VARIANTS!r} variant alone (no RL); drop "
            f"--variants {variants!r} or --checks-only"
        )
    return CHECKS_ONLY_VARIANTS


def _over_base_seeds(
    out: Path,
    preset: str,
    base_seeds: int,
    seeds: int,
    variants: str,
    eval_limit: int,
    overrides: list[str] | tuple[str, ...],
) -> None:
    """``--base-seeds N``: one run per base seed, then the checks × seeds table."""
    from paravt.report.summary_run import report_to_summary_run
    from paravt.repro.base_seeds import run_over_base_seeds
    from paravt.repro.stages import console
    from paravt.repro.table import checks_table

    checks = run_over_base_seeds(
        out,
        preset=preset,
        base_seeds=base_seeds,
        seeds=seeds or (3 if preset == "full" else 1),
        variants=variants or None,
        eval_limit=eval_limit or None,
        overrides=overrides,
    )
    for s in range(base_seeds):
        report_to_summary_run(out / f"base_seed{s}", console)
    stdout_console().print(checks_table(json.loads(checks.read_text())))
    stdout_console().print(f"checks: {checks}", soft_wrap=True)
