"""The simulated base's learning curve (issue 47, M1: find why a build misses a skill): the base
probe and the habit probe of the base's saved checkpoints, and the base checks of each.

``paravt repro --base-curve EVERY`` runs it after the run (each ``base_seedS`` with
``--base-seeds``): the checkpoints ``prior.save_every`` left under the base's ``train/checkpoints``
whose step is a multiple of ``EVERY``, then the final model (the run's own probes), into
``OUT/prior_PRIOR/curve.json``; each point is ``{"step", "checks"}`` with the checks of
``repro.base_probe`` (``base_checks`` and ``habit_checks``: value, want, holds).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paravt.jsonl import write_atomic

if TYPE_CHECKING:
    from paravt.config import TrainConfig
    from paravt.repro.presets import ReproPreset

_STEP = re.compile(r"step_(\d+)$")


def checkpoint_models(train: Path, every: int, *, final_step: int) -> list[tuple[int, Path]]:
    """(step, model dir) of each checkpoint under ``train/checkpoints`` whose step is a multiple
    of ``every``, is before ``final_step`` (the run's last step: its final model is probed by the
    run itself) and holds a model, in step order."""
    if every < 1:
        raise ValueError(
            f"--base-curve must be ≥ 1 (steps between probed checkpoints), not {every}"
        )
    points = []
    for d in sorted((train / "checkpoints").glob("step_*")):
        m = _STEP.search(d.name)
        step = int(m.group(1)) if m else -1
        if m and step % every == 0 and step < final_step and (d / "model/config.json").is_file():
            points.append((step, d / "model"))
    return points


def base_curve(
    out: Path, cfg: TrainConfig, p: ReproPreset, *, every: int, prior: str = "strong"
) -> Path:
    """Probe the base of the run in ``out`` (its ``prior_PRIOR/base.json``) at every ``every``
    steps; the last point is the final model's, read from the run's own base and habit probes
    (``base.json``), not probed again. Returns ``OUT/prior_PRIOR/curve.json``."""
    from paravt.repro.base_probe import base_checks, habit_checks, run_probe
    from paravt.repro.bases import base_paths
    from paravt.repro.stages import console
    from paravt.repro.training import habit_probe

    pdir = out / f"prior_{prior}"
    base = json.loads((pdir / "base.json").read_text())
    bdir, settings = Path(base["dir"]), base["settings"]
    synth = base_paths(bdir.parent, settings, prior)[0]
    v = settings["video"]
    points = []
    final = int(settings["prior"]["steps"])
    for step, model in checkpoint_models(bdir / "train", every, final_step=final):
        console.print(f"base curve ({prior}): step {step}")
        probe = run_probe(
            str(model),
            synth / "base_eval.parquet",
            max_new_tokens=settings["probe_max_new_tokens"],
            max_pixels=v["overview_max_pixels"],
            crop_max_pixels=v["crop_max_pixels"],
            size_factor=v["size_factor"],
        )
        habit = habit_probe(out, cfg, p, model)
        checks = {**base_checks(probe), **habit_checks(habit, strong=prior == "strong")}
        points.append({"step": step, "checks": checks})
    final_checks = base_checks(base["probe"])
    final_checks.update(habit_checks(base["probe"].get("habit"), strong=prior == "strong"))
    points.append({"step": final, "checks": final_checks})
    path = pdir / "curve.json"
    write_atomic(path, json.dumps(points, indent=1, default=float), "the base's learning curve")
    return path


def curve_rows(points: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One flat row per point: each check's headline number (a rate, an accuracy or the value
    itself) and whether it holds, for a table."""
    rows = []
    for pt in points:
        row: dict[str, Any] = {"step": pt["step"]}
        for name, c in (pt.get("checks") or {}).items():
            row[name] = (_headline(c.get("value")), bool(c.get("holds")))
        rows.append(row)
    return rows


def _headline(value: Any) -> Any:
    if isinstance(value, Mapping):
        for key in ("rate", "acc", "tool_call_closed"):
            if key in value:
                inner = value[key]
                got = inner.get("rate") if isinstance(inner, Mapping) else inner
                if key == "tool_call_closed":
                    return f"{_fmt(got)} / {_fmt(value.get('tool_code'))}"
                return got
    return value


def _fmt(x: Any) -> str:
    return "–" if x is None else f"{float(x):.2f}"


__all__ = ["base_curve", "checkpoint_models", "curve_rows"]
