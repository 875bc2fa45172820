"""The simulated pretrained base with its tool prior as a trainer kind (``paravt train prior``).

The base is SFT on pretraining data (``paravt.data.synth.base``: clip descriptions, plain overview
QA, and habit traces of ``paravt.data.synth.prior``: long thinks, untagged answers and, for a share
``prior.tool_mix`` of prompts, one ``<tool_code>`` python call per turn) from ``cfg.data`` (a
``base.parquet``; an ``rl.parquet`` gives the habit traces only). It runs before the SFT cold
start (``init_from``/``model.path`` of the SFT stage = this stage's ``out_dir/model``), so the
cold-started model carries a competing habit temperature sampling can resurface.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from paravt.rl.sequence import trace_sequences
from paravt.rl.sft import SFTTrainer, require_rows
from paravt.rl.trainer import TrainerSettings

if TYPE_CHECKING:
    from paravt.agent.trajectory import Trajectory
    from paravt.config import TrainConfig, VideoConfig
    from paravt.data.rows import Row
    from paravt.data.synth.prior import Habit
    from paravt.models.chat import ChatCodec
    from paravt.rl.session import PolicySession


@dataclass
class PriorTrainer(SFTTrainer):
    """``SFTTrainer`` on ``paravt.data.synth.prior`` traces, with the ``prior`` config section."""

    @classmethod
    def trainer_settings(cls, cfg: TrainConfig) -> TrainerSettings:
        return TrainerSettings(
            optim=cfg.prior,
            seed=cfg.prior.seed,
            save_every=cfg.prior.save_every,
            generate=False,
            reference=False,
        )

    @classmethod
    def check_data(cls, cfg: TrainConfig) -> None:
        require_rows(
            cfg.data,
            ("rl",),
            "prompts to build the base stage's traces from",
            "point `data` at a ParaVT-Synth base.parquet (or rl.parquet: the habit traces only)",
        )

    @classmethod
    def build(cls, cfg: TrainConfig, session: PolicySession) -> PriorTrainer:
        from paravt.data.schema import read_rows
        from paravt.data.synth.prior import Habit

        p = cfg.prior
        rows = read_rows(
            Path(cfg.data)
        )  # no prompt rows: `check_data` (and `prior_traces`) refuse them
        root = Path(cfg.data_root) if cfg.data_root else Path(cfg.data).parent
        examples = prior_examples(
            rows,
            root,
            session.codec,
            tool_mix=p.tool_mix,
            habit=Habit.of(p),
            seed=p.seed,
            copies=p.habit_copies,
            video=cfg.video,
        )
        return cls(
            examples,
            session.model,
            session.processor,
            session.optimizer,
            p.batch_size,
            p.max_grad_norm,
            total_steps=p.steps,
            lr=p.lr,
            warmup_steps=p.warmup_steps,
            seed=p.seed,
            micro_batch_tokens=p.micro_batch_tokens,
            lr_decay=p.lr_decay,
            min_lr_ratio=p.min_lr_ratio,
            loss_agg=p.loss_agg,
        )


def prior_examples(
    rows: Sequence[Row],
    root: Path,
    codec: ChatCodec,
    *,
    tool_mix: float,
    habit: Habit,
    seed: int,
    video: VideoConfig,
    copies: int = 1,
) -> list[Trajectory]:
    """The base stage's training sequences of a ``base.parquet``'s rows (``prior_traces``), frames
    decoded from the videos under ``root`` at ``video``'s overview and crop sizes."""
    from paravt.data.synth.base import prior_traces

    traces = prior_traces(rows, tool_mix=tool_mix, habit=habit, seed=seed, copies=copies)
    return trace_sequences(traces, root, codec, video)
