"""The outer training loop shared by SFT and PARA-GRPO: resume, progress, logging, checkpoints.

Resume is bit-for-bit on the CPU: a checkpoint holds the weights, the optimizer state, every RNG
state and the data position, and each RL step reseeds its sampling from (seed, step); so a run
killed after its step-k checkpoint and resumed logs the same numbers as an uninterrupted run.
Resume uses the newest checkpoint whose checksums verify; each newer one it skips is named, with
the reason, in a warning on stderr.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Literal

import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from paravt.config import TrainConfig
from paravt.rl.checkpoint import load_trainer_state, resume_point, save_checkpoint, set_rng_state
from paravt.rl.logger import MetricsLogger
from paravt.rl.session import PolicySession

Kind = Literal["sft", "rl"]

log = logging.getLogger(__name__)


def _warmup(optimizer: torch.optim.Optimizer, lr: float, warmup: int, step: int) -> None:
    scale = min(1.0, (step + 1) / warmup) if warmup > 0 else 1.0
    for g in optimizer.param_groups:
        g["lr"] = lr * scale


def _sft_steps(cfg: TrainConfig, n_examples: int) -> int:
    per_epoch = math.ceil(n_examples / cfg.sft.batch_size)
    total = per_epoch * cfg.sft.epochs
    return min(total, cfg.sft.max_steps) if cfg.sft.max_steps else total


def run_training(cfg: TrainConfig, *, kind: Kind, resume: bool = False, progress: bool = True,
                 stop_after: int | None = None) -> Path:
    """Train; returns the run directory (final model in ``out_dir/model``).

    ``stop_after`` ends the process-level loop after that many steps WITHOUT the final save, the
    way a killed run would stop (used by the resume test).
    """
    out = Path(cfg.out_dir)
    ckpt_root = out / "checkpoints"
    ckpt = _resume_checkpoint(ckpt_root) if resume else None
    init = str(ckpt / "model") if ckpt else (cfg.init_from or cfg.model.path)
    lr = cfg.rl.lr if kind == "rl" else cfg.sft.lr
    seed = cfg.rl.seed if kind == "rl" else cfg.sft.seed
    torch.manual_seed(seed)
    session = PolicySession.create(
        init, lr=lr, device=cfg.model.device, dtype=cfg.model.dtype, generate=kind == "rl",
        reference=kind == "rl" and cfg.rl.kl_coef > 0 and ckpt is None, tools=cfg.rollout.tools,
        tool_server_url=cfg.rollout.tool_server_url, python_weak_isolation=cfg.rollout.python_weak_isolation,
    )
    if kind == "rl" and ckpt is not None and cfg.rl.kl_coef > 0:
        # the reference is the policy the run STARTED from, not the checkpoint
        from paravt.models.loading import load_policy

        session.ref_model = load_policy(cfg.init_from or cfg.model.path, device=cfg.model.device,
                                        dtype=cfg.model.dtype).model.eval()
    trainer, total = _build(cfg, kind, session)
    start = 0
    if ckpt is not None:
        state, blob = load_trainer_state(ckpt)
        session.optimizer.load_state_dict(blob["optimizer"])
        set_rng_state(blob["rng"])
        start = int(state["step"])
        if kind == "rl":
            trainer.cursor.epoch, trainer.cursor.position = state["epoch"], state["position"]
    logger = MetricsLogger(out, name=out.name, kind=kind, config=cfg.model_dump(mode="json"), resume=ckpt is not None)
    if ckpt is not None:
        logger.truncate_after(start)
    save_every = cfg.rl.save_every if kind == "rl" else cfg.sft.save_every
    with _progress(progress) as bar:
        task = bar.add_task(f"{kind} {out.name}", total=total, completed=start)
        for step in range(start, total):
            if stop_after is not None and step - start >= stop_after:
                return out
            if kind == "sft":
                _warmup(session.optimizer, lr, cfg.sft.warmup_steps, step)
            t0 = time.perf_counter()
            metrics = trainer.step(step).metrics if kind == "rl" else trainer.step(step)
            metrics["time/step"] = time.perf_counter() - t0
            logger.log(step + 1, metrics)
            bar.update(task, advance=1, description=_describe(kind, out.name, metrics))
            if (step + 1) % save_every == 0 and step + 1 < total:
                _save(ckpt_root, step + 1, session, trainer, kind)
    session.model.save_pretrained(out / "model")
    session.processor.save_pretrained(out / "model")
    logger.close()
    return out


def _resume_checkpoint(root: Path) -> Path | None:
    """The newest checkpoint that verifies; every newer one skipped is reported with its reason."""
    point = resume_point(root)
    for path, reason in point.skipped:
        log.warning("resume: skipping checkpoint %s: %s", path, reason)
    if point.checkpoint is not None:
        if point.skipped:
            log.warning("resume: continuing from %s", point.checkpoint)
    elif point.skipped:
        log.warning("resume: no checkpoint under %s verifies; training starts from the initial model", root)
    return point.checkpoint


def _build(cfg: TrainConfig, kind: Kind, session: PolicySession):  # -> (trainer, total steps)
    if kind == "rl":
        from paravt.rl.grpo import GRPOTrainer

        prompts = load_episode_inputs(Path(cfg.data), Path(cfg.data_root) if cfg.data_root else None)
        return GRPOTrainer(cfg, prompts, session), cfg.rl.steps
    from paravt.rl.sft import SFTTrainer, load_examples

    examples = load_examples(
        Path(cfg.data), Path(cfg.data_root) if cfg.data_root else None, session.codec,
        include_sub=cfg.sft.include_subagent_rows, max_pixels=cfg.video.overview_max_pixels,
        crop_max_pixels=cfg.video.crop_max_pixels, size_factor=cfg.video.size_factor,
        mask_think_prefix=cfg.sft.mask_think_prefix,
    )
    if not examples:
        raise ValueError(f"{cfg.data} holds no SFT rows; build it with `paravt data synth`")
    trainer = SFTTrainer(examples, session.model, session.processor, session.optimizer, cfg.sft.batch_size,
                         cfg.sft.max_grad_norm, cfg.sft.seed)
    return trainer, _sft_steps(cfg, len(examples))


def load_episode_inputs(path: Path, root: Path | None = None, *, nframes: int | None = None,
                        limit: int | None = None) -> list:
    """Prompt rows (kind ``rl``) of a parquet file as EpisodeInputs."""
    from paravt.data.chat import to_episode_input
    from paravt.data.schema import read_rows

    base = root if root is not None else path.parent
    rows = [r for r in read_rows(path) if r.kind == "rl"]
    out = [to_episode_input(r, base, nframes=nframes) for r in rows]
    return out[:limit] if limit else out


def _save(root: Path, step: int, session: PolicySession, trainer, kind: Kind) -> None:
    state = {"kind": kind}
    if kind == "rl":
        state.update(epoch=trainer.cursor.epoch, position=trainer.cursor.position)
    save_checkpoint(root, step, model=session.model, processor=session.processor, optimizer=session.optimizer,
                    state=state)


def _describe(kind: Kind, name: str, m: dict[str, float]) -> str:
    if kind == "sft":
        return f"sft {name} loss={m.get('loss', 0):.3f}"
    return (f"rl {name} R={m.get('reward/mean', 0):+.2f} acc={m.get('acc', 0):.2f} "
            f"f_tau={m.get('f_tau', 0):.2f} kappa={m.get('kappa', 0):.2f}")


def _progress(enabled: bool) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    disable=not enabled)
