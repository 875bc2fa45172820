"""The outer training loop shared by SFT and PARA-GRPO: resume, progress, logging, checkpoints.

Resume is bit-for-bit on the CPU: a checkpoint holds the weights, the optimizer state, every RNG
state and the data position, and each RL step reseeds its sampling from (seed, step); so a run
killed after its step-k checkpoint and resumed logs the same numbers as an uninterrupted run.
Resume uses the newest checkpoint whose checksums verify; each newer one it skips is named, with
the reason, in a warning on stderr.
A step that leaves the loss or a parameter non-finite or out of range stops the run before anything
of it is saved (``paravt.rl.health``: one line naming the step and the knob; resume uses the last
good checkpoint).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from paravt import runlock
from paravt.config import RUN_CONFIG, TrainConfig, save
from paravt.errors import Interrupted, TrainingError
from paravt.rl.checkpoint import (
    load_trainer_state,
    resume_point,
    save_checkpoint,
    save_final_model,
    set_rng_state,
)
from paravt.rl.health import check_step, no_update_problem, param_peaks
from paravt.rl.logger import MetricsLogger
from paravt.rl.model_card import write_model_card
from paravt.rl.registry import TRAINERS, Kind
from paravt.rl.session import PolicySession
from paravt.rl.step_stats import perf_metrics
from paravt.rl.trainer import Trainer, TrainerSettings
from paravt.tracking import TrackingSettings, require_all
from paravt.tracking.tags import OF_TRAINER

log = logging.getLogger(__name__)


def run_training(
    cfg: TrainConfig,
    *,
    kind: Kind,
    resume: bool = False,
    progress: bool = True,
    stop_after: int | None = None,
) -> Path:
    """Train a ``kind`` trainer (``paravt.rl.registry.TRAINERS``); returns the run directory
    (final model in ``out_dir/model``).

    ``stop_after`` ends the process-level loop after that many steps WITHOUT the final save, the
    way a killed run would stop (used by the resume test). One run per ``out_dir`` at a time
    (`paravt.runlock`: a second one raises `OutputLocked` naming the first).
    """
    with runlock.hold(cfg.out_dir, f"paravt train {kind}"):
        return _run_training(
            cfg, kind=kind, resume=resume, progress=progress, stop_after=stop_after
        )


def _run_training(
    cfg: TrainConfig, *, kind: Kind, resume: bool, progress: bool, stop_after: int | None
) -> Path:
    cls = TRAINERS[kind]
    ts = cls.trainer_settings(cfg)
    cls.check_data(cfg)  # a wrong data file is refused before the model loads
    # tagged with the run's kind (prior: base), seed, variant and commit
    tracking = TrackingSettings.from_config(cfg.logging).tagged(OF_TRAINER[kind], seed=ts.seed)
    require_all(tracking.loggers)  # so is a tracker whose package is missing
    out = Path(cfg.out_dir)
    ckpt = _resume_checkpoint(out / "checkpoints") if resume else None
    # the trackers start before the model loads: a dead tracking server fails in seconds
    logger = MetricsLogger(
        out,
        name=out.name,
        kind=kind,
        config=cfg.model_dump(mode="json"),
        resume=resume,  # with no checkpoint too: the same tracker runs, no step twice
        tracking=tracking,
    )
    with _signals_raise(), _closing(logger):
        _train(cfg, kind, ts, cls, logger, ckpt, progress, stop_after, tracking)
    return out


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM raises `Interrupted` in the main thread (SIGINT is KeyboardInterrupt already)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: object) -> None:
        raise Interrupted(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _closing(logger: MetricsLogger) -> Iterator[None]:
    """Every exit path ends the trackers' runs: FINISHED, KILLED (a signal) or FAILED."""
    try:
        yield
    except (Interrupted, KeyboardInterrupt):
        logger.close("KILLED")
        raise
    except BaseException:
        logger.close("FAILED")
        raise
    logger.close()


def _train(
    cfg: TrainConfig,
    kind: Kind,
    ts: TrainerSettings,
    cls: type[Trainer],
    logger: MetricsLogger,
    ckpt: Path | None,
    progress: bool,
    stop_after: int | None,
    tracking: TrackingSettings,
) -> bool:
    """Load the model (from ``ckpt`` when resuming), run the steps, save the final model."""
    out = Path(cfg.out_dir)
    start_from = cfg.init_from or cfg.model.path
    torch.manual_seed(ts.seed)
    session = PolicySession.create(
        cfg.model,
        ts.optim,
        rollout=cfg.rollout if ts.generate else None,
        path=str(ckpt / "model") if ckpt else start_from,
        reference=start_from if ts.reference else None,  # the policy the run STARTED from
    )
    trainer = cls.build(cfg, session)
    start = 0
    if ckpt is not None:
        state, blob = load_trainer_state(ckpt)
        session.optimizer.load_state_dict(blob["optimizer"])
        set_rng_state(blob["rng"])
        start = int(state["step"])
        trainer.load_state_dict(state)
    logger.truncate_after(start)  # resumed: back to the checkpoint; the trackers get what they lack
    card = _model_card(cfg, kind)
    finished = _steps(
        trainer,
        session,
        logger,
        saves=_Saves(kind, out, ts.save_every, card),
        start=start,
        progress=progress and "console" in tracking.loggers,
        stop_after=stop_after,
    )
    if finished:
        _finish(session, out, lambda d: card(d, trainer.total_steps, logger.last))
    return finished


def _model_card(cfg: TrainConfig, kind: str) -> Callable[[Path, int, Mapping[str, Any]], None]:
    """What every saved model directory gets beside the weights: the run's settings
    (``paravt_config.yaml``: infer and eval run it as trained) and its model card."""

    def write(model_dir: Path, step: int, metrics: Mapping[str, Any]) -> None:
        save(cfg, model_dir / RUN_CONFIG)
        write_model_card(model_dir, cfg, kind=kind, step=step, metrics=metrics)

    return write


def _finish(session: PolicySession, out: Path, write_config: Callable[[Path], None]) -> None:
    """The final model (with its settings and model card, ``write_config``), then the generator's
    replica processes end (paravt.models.hf.replicas)."""
    save_final_model(
        out / "model",
        model=session.model,
        processor=session.processor,
        checkpoints=out / "checkpoints",
        write_config=write_config,
    )
    if session.generator is not None:
        asyncio.run(session.generator.aclose())


@dataclass(frozen=True)
class _Saves:
    """What the step loop saves, and where: the trainer kind, the run directory, a checkpoint
    every ``every`` steps, each with its settings and model card (``card``)."""

    kind: str
    out: Path
    every: int
    card: Callable[[Path, int, Mapping[str, Any]], None]


def _steps(
    trainer: Trainer,
    session: PolicySession,
    logger: MetricsLogger,
    *,
    saves: _Saves,
    start: int,
    progress: bool,
    stop_after: int | None,
) -> bool:
    """Steps ``start``..``total_steps`` with their logs and checkpoints (``saves``); False when
    ``stop_after`` ended them first (the way a killed run stops: no final save)."""
    total = trainer.total_steps
    with _progress(progress) as bar:
        task = bar.add_task(f"{saves.kind} {saves.out.name}", total=total, completed=start)
        first = peaks = param_peaks(session.model)  # the divergence check's reference
        skipped: list[dict[str, float]] | None = []  # every step so far skipped; None: one updated
        for step in range(start, total):
            if stop_after is not None and step - start >= stop_after:
                return False
            t0 = time.perf_counter()
            metrics = trainer.step(step)
            peaks = check_step(
                step + 1,
                metrics,
                session.model,
                kind=saves.kind,
                checkpoints=saves.out / "checkpoints",
                before=peaks,
                start=first,
            )
            if skipped is not None and metrics.get("update_skipped", 0.0) < 1.0:
                skipped = None
            elif skipped is not None:
                skipped.append(metrics)
            took = time.perf_counter() - t0
            metrics["timing_s/step"] = took
            metrics.update(perf_metrics(metrics, took, logger.cumulative_tokens))
            logger.cumulative_tokens = metrics["perf/cumulative_tokens"]
            logger.log(step + 1, metrics, trainer.rollouts())
            bar.update(
                task,
                advance=1,
                description=f"{saves.kind} {saves.out.name} {trainer.describe(metrics)}",
            )
            if (step + 1) % saves.every == 0 and step + 1 < total:
                save_checkpoint(
                    saves.out / "checkpoints",
                    step + 1,
                    model=session.model,
                    processor=session.processor,
                    optimizer=session.optimizer,
                    state={"kind": saves.kind, **trainer.state_dict()},
                    write_config=functools.partial(_card_at, saves.card, step + 1, metrics),
                )
    dtype = str(next(iter(session.model.parameters()), torch.empty(0)).dtype).removeprefix("torch.")
    if skipped and (problem := no_update_problem(saves.kind, start + 1, skipped, dtype=dtype)):
        raise TrainingError(problem)  # the model is the one the run started from: not "done"
    return True


def _card_at(
    card: Callable[[Path, int, Mapping[str, Any]], None],
    step: int,
    metrics: Mapping[str, Any],
    model_dir: Path,
) -> None:
    card(model_dir, step, metrics)


def _resume_checkpoint(root: Path) -> Path | None:
    """The newest checkpoint that verifies; every newer one skipped is reported with its reason."""
    point = resume_point(root)
    for path, reason in point.skipped:
        log.warning("resume: skipping checkpoint %s: %s", path, reason)
    if point.checkpoint is not None:
        if point.skipped:
            log.warning("resume: continuing from %s", point.checkpoint)
    elif point.skipped:
        log.warning(
            "resume: no checkpoint under %s verifies; training starts from the initial model", root
        )
    return point.checkpoint


def _progress(enabled: bool) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=not enabled,
    )
