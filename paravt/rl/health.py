"""A training run never reports success over a broken model (issue 34 item 2, issue 41 item 1).

After every optimisation step the loop calls ``check_step``: the step's loss must be finite and
within ``±MAX_LOSS``, every parameter finite, and no parameter tensor's largest ``|value|`` may jump
(more than ``GROWTH`` times in one step and past ``FLOOR``) or pass ``CEILING``: weights of 1e30
stay finite, so finiteness alone let a destroyed model through (an RL run at lr=1e30 said "done").
When one fails, the run stops at once with ONE `TrainingError` line naming the step, what is
broken, the likely knob and the checkpoint a resume uses. An RL step whose every rollout group was
dropped as an error (a failed generation or a crashed episode) stops it too: such a run used to go
on, learning nothing, to "rl done". The check runs before the step's
checkpoint and before the final save, so no non-finite model is ever written: the newest checkpoint
on disk is the last good one and ``--resume`` continues from it (``paravt.rl.checkpoint``).

A step whose update was skipped by the NaN/inf guard of
``paravt.rl.optim_step.optimizer_step`` (a non-finite gradient norm at a finite loss), or that had
nothing to train on, leaves the parameters unchanged; it goes on, counted in ``update_skipped``.
A run in which EVERY step skipped its update ends with one `TrainingError` line instead of "done"
(``no_update_problem``), its model unsaved.
A divergence names the knob whose quantity overflowed: the advantages (``rl.reward_scale``) when
they alone carry the loss out of range, else the learning rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from paravt.errors import TrainingError
from paravt.rl.checkpoint import latest_checkpoint

#: A step diverged when a parameter tensor's largest ``|value|`` grows more than ``GROWTH`` times
#: in one step and past ``FLOOR`` (an update of several units per weight: AdamW moves each weight by
#: about the learning rate), or when it passes ``CEILING`` (or ``CEILING_FACTOR`` times its value at
#: the run's start, for a model that starts above it), or when the loss leaves ``±MAX_LOSS``.
GROWTH, FLOOR, CEILING, CEILING_FACTOR = 4.0, 1.0, 1e4, 10.0
MAX_LOSS = 1e4
#: The PPO loss is at most about max |A| × (1 + clip_eps) plus a capped KL, so advantages past
#: half of ``MAX_LOSS`` carry the loss out of range alone: the rewards' scale (``rl.reward_scale``,
#: reaching the loss unnormalised with ``rl.adv_norm: none`` and ``rl.std_normalize: false``), not
#: the learning rate. ``rl.reward_scale`` ≤ 1e3 keeps the default rewards' |A| near 3e3 (they
#: span about 3), below it.
ADV_CEILING = MAX_LOSS / 2


@dataclass(frozen=True)
class Peaks:
    """The largest ``|value|`` of each parameter tensor (nan or inf when it holds one)."""

    names: tuple[str, ...]
    values: tuple[float, ...]


def param_peaks(model: Any) -> Peaks:
    """One reduction per tensor, one device→host copy in all."""
    named = [(n, p) for n, p in model.named_parameters()]
    if not named:
        return Peaks((), ())
    peaks = torch.stack([_peak(p.detach()) for _, p in named])  # (n_params,)
    return Peaks(tuple(n for n, _ in named), tuple(peaks.tolist()))


def _peak(t: torch.Tensor) -> torch.Tensor:
    """``max |t|`` as a float32 scalar (nan when ``t`` holds one; 0 for an empty tensor), without
    a full-size temporary: the inf-norm reduction reads ``t`` once."""
    if not t.numel():
        return t.new_zeros((), dtype=torch.float32)
    return torch.linalg.vector_norm(t, ord=math.inf).float()


def broken_parameters(model: Any) -> list[str]:
    """Names of the parameters holding inf or nan."""
    p = param_peaks(model)
    return [n for n, v in zip(p.names, p.values, strict=True) if not math.isfinite(v)]


def _out_of_range(now: Peaks, before: Peaks | None, start: Peaks | None) -> str | None:
    """The first parameter whose peak left the sane range this step (see ``GROWTH``)."""
    prev = before.values if before is not None and before.names == now.names else None
    first = start.values if start is not None and start.names == now.names else None
    for i, (name, v) in enumerate(zip(now.names, now.values, strict=True)):
        if prev is not None and v > max(GROWTH * prev[i], FLOOR):
            return (
                f"parameter {name} grew from |w| = {prev[i]:.3g} to {v:.3g} in one step (more "
                f"than {GROWTH:g} times, past {FLOOR:g})"
            )
        ceiling = CEILING if first is None else max(CEILING, CEILING_FACTOR * first[i])
        if v > ceiling:
            return f"parameter {name} reached |w| = {v:.3g} (past {ceiling:.3g})"
    return None


def check_step(
    step: int,
    metrics: Mapping[str, float],
    model: Any,
    *,
    kind: str,
    checkpoints: Path,
    before: Peaks | None = None,
    start: Peaks | None = None,
) -> Peaks:
    """`TrainingError` when 1-based ``step`` left the loss (``actor/loss``, ``train/loss``)
    non-finite or outside ``±MAX_LOSS``, a parameter of ``model`` non-finite, or a parameter's peak
    out of its range (``before``: the peaks before this step, ``start``: at the run's start; see
    ``GROWTH``); ``kind`` names the config section whose knobs the fix names. Returns the peaks
    after the step (the next step's ``before``)."""
    if (failed := _every_group_failed(metrics)) is not None:
        raise TrainingError(
            f"train {kind}: step {step}: every rollout group failed ({failed} dropped as errors: "
            "the generator failed the requests or the episodes crashed, logged above); nothing "
            "can be learned from it, so the run is stopped"
        )
    loss = float(_first(metrics, LOSS_KEYS, 0.0))
    now = param_peaks(model)
    broken = [n for n, v in zip(now.names, now.values, strict=True) if not math.isfinite(v)]
    what = [] if math.isfinite(loss) else [f"the loss is {loss}"]
    if math.isfinite(loss) and abs(loss) > MAX_LOSS:
        what.append(f"the loss is {loss:.3g}, outside the sane range ±{MAX_LOSS:g}")
    if broken:
        what.append(f"{len(broken)} parameter tensor(s) hold inf or nan (first: {broken[0]})")
    elif (jump := _out_of_range(now, before, start)) is not None:
        what.append(jump)
    if not what:
        return now
    raise _diverged(step, what, metrics, kind=kind, checkpoints=checkpoints)


#: A step's loss and learning rate, by trainer: RL (verl's actor names), SFT and prior (verl's SFT).
LOSS_KEYS, LR_KEYS = ("actor/loss", "train/loss"), ("actor/lr", "train/lr")
GRAD_KEYS = ("actor/grad_norm", "train/grad_norm")


def _first(metrics: Mapping[str, Any], keys: Sequence[str], default: Any) -> Any:
    return next((metrics[k] for k in keys if k in metrics), default)


def _every_group_failed(metrics: Mapping[str, float]) -> int | None:
    """The number of groups of an RL step when every one was dropped as an error (a failed
    generation or a crashed episode: ``paravt.rl.filters.filter_groups``), else None."""
    failed = int(metrics.get("filter/error_dropped", 0.0))
    others = ("filter/zero_var_dropped", "filter/rank_dropped", "groups/kept")
    return failed if failed > 0 and not any(metrics.get(k, 0.0) for k in others) else None


def _diverged(
    step: int, what: list[str], metrics: Mapping[str, float], *, kind: str, checkpoints: Path
) -> TrainingError:
    last = latest_checkpoint(checkpoints)
    kept = (
        f"resume (--resume) continues from the last good checkpoint {last}"
        if last is not None
        else f"no checkpoint was written before it (nothing under {checkpoints}), so a rerun "
        "starts over"
    )
    lr = _first(metrics, LR_KEYS, None)
    at = f" (this step ran at lr={lr:g})" if isinstance(lr, float) and math.isfinite(lr) else ""
    knob = f"{kind}.lr{at}: lower it (or {kind}.max_grad_norm)"
    loss = float(_first(metrics, LOSS_KEYS, 0.0))
    peak = advantage_peak(metrics)
    if not (math.isfinite(loss) and abs(loss) <= MAX_LOSS) and _scale_overflowed(peak):
        knob = _REWARD_SCALE.format(peak=peak)  # the loss left its range through the advantages
    return TrainingError(
        f"train {kind}: step {step} diverged: {'; '.join(what)}; the run is stopped and this "
        f"model is not saved; {kept}; the likely knob is {knob}"
    )


_REWARD_SCALE = (
    "rl.reward_scale: the step's advantages reached |advantage| up to {peak:.3g}, enough alone to "
    "carry the loss out of range; lower it (or set rl.adv_norm: batch / rl.std_normalize: true)"
)


def advantage_peak(metrics: Mapping[str, float]) -> float | None:
    """The largest |advantage| of an RL step (``critic/advantages/{max,min}``); None without."""
    ends = [metrics.get(f"critic/advantages/{k}") for k in ("max", "min")]
    values = [abs(float(v)) for v in ends if v is not None]
    return max(values) if values else None


def _scale_overflowed(peak: float | None) -> bool:
    return peak is not None and not peak <= ADV_CEILING  # nan counts as overflowed


def no_update_problem(
    kind: str, first: int, steps: Sequence[Mapping[str, float]], *, dtype: str
) -> str | None:
    """Why a run whose ``steps`` (the metrics of steps ``first``, ``first + 1``, ...) ALL skipped
    their update changed nothing, naming the likely knob; None when one step updated (or none ran).
    A run that ends so says success over the model it started from (issue 48: rl.reward_scale=1e30
    ran 30 skipped steps to "rl done", exit 0)."""
    if not steps or any(float(m.get("update_skipped", 0.0)) < 1.0 for m in steps):
        return None
    empty = sum(1 for m in steps if float(m.get("tokens/trained", 1.0)) == 0.0)
    overflow = sum(1 for m in steps if not math.isfinite(float(_first(m, GRAD_KEYS, 0.0))))
    peaks = [p for m in steps if (p := advantage_peak(m)) is not None]
    peak = max(peaks, default=None) if all(math.isfinite(p) for p in peaks) else math.inf
    why = [f"{overflow} with a non-finite gradient norm"] if overflow else []
    why += [f"{empty} with nothing to train on"] if empty else []
    rest = len(steps) - overflow - empty
    why += [f"{rest} with a non-finite loss"] if rest > 0 else []
    if overflow and _scale_overflowed(peak):
        knob = _REWARD_SCALE.format(peak=peak)
    elif overflow:
        knob = (
            f"the numbers of the model: a gradient overflowed at sane advantages; check "
            f"model.dtype ({dtype} here; float32 is the safe one) and lower {kind}.lr"
        )
    else:
        knob = (
            "the data: no step kept a rollout or token to train on (rl.filter: online drops "
            "equal-reward groups; a prompt set the model always or never solves gives only those)"
        )
    last = first + len(steps) - 1
    return (
        f"train {kind}: no update happened in steps {first}-{last}: every step skipped its "
        f"update ({', '.join(why)}), so the model is the one the run started from and is not "
        f"saved as the trained model (train_log.jsonl keeps every step); the likely cause is "
        f"{knob}"
    )
