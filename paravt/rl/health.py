"""A training run never reports success over a broken model (issue 34 item 2).

After every optimisation step the loop calls ``check_step``: the step's loss and every parameter
must be finite. When one is not (``--set rl.lr=1e30``: the first update blows the weights up, the
next forward overflows), the run stops at once with ONE `TrainingError` line naming the step, what
is broken, the likely knob and the checkpoint a resume uses. The check runs before the step's
checkpoint and before the final save, so no non-finite model is ever written: the newest checkpoint
on disk is the last good one and ``--resume`` continues from it (``paravt.rl.checkpoint``).

A step whose update was skipped by the NaN/inf guard of ``paravt.rl.update.optimizer_step`` (a
non-finite gradient norm at a finite loss) leaves the parameters unchanged; it goes on, counted in
``update_skipped``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from paravt.errors import TrainingError
from paravt.rl.checkpoint import latest_checkpoint


def broken_parameters(model: Any) -> list[str]:
    """Names of the parameters holding inf or nan (one reduction per tensor, one sync in all)."""
    named = list(model.named_parameters())
    if not named:
        return []
    finite = torch.stack([torch.isfinite(p.detach()).all() for _, p in named])  # (n_params,)
    if bool(finite.all()):
        return []
    return [name for (name, _), ok in zip(named, finite.tolist(), strict=True) if not ok]


def check_step(
    step: int, metrics: Mapping[str, float], model: Any, *, kind: str, checkpoints: Path
) -> None:
    """`TrainingError` when 1-based ``step`` left the loss (``metrics["loss"]``) or a parameter of
    ``model`` non-finite; ``kind`` names the config section whose knobs the fix names."""
    loss = float(metrics.get("loss", 0.0))
    broken = broken_parameters(model)
    if math.isfinite(loss) and not broken:
        return
    what = [] if math.isfinite(loss) else [f"the loss is {loss}"]
    if broken:
        what.append(f"{len(broken)} parameter tensor(s) hold inf or nan (first: {broken[0]})")
    last = latest_checkpoint(checkpoints)
    kept = (
        f"resume (--resume) continues from the last good checkpoint {last}"
        if last is not None
        else f"no checkpoint was written before it (nothing under {checkpoints}), so a rerun "
        "starts over"
    )
    lr = metrics.get("lr")
    at = f" (this step ran at lr={lr:g})" if isinstance(lr, float) and math.isfinite(lr) else ""
    raise TrainingError(
        f"train {kind}: step {step} diverged: {'; '.join(what)}; the run is stopped and this "
        f"model is not saved; {kept}; the likely knob is {kind}.lr{at}: lower it "
        f"(or {kind}.max_grad_norm)"
    )
