"""The simulated pretrained base with its tool prior as a trainer kind (``paravt train prior``).

The base is SFT on pretraining data (``paravt.data.synth.base``: clip descriptions, plain overview
QA, and habit traces of ``paravt.data.synth.prior``: long thinks, untagged answers and, for a share
``prior.tool_mix`` of prompts, one ``<tool_code>`` python call per turn) from ``cfg.data`` (a
``base.parquet``; an ``rl.parquet`` gives the habit traces only). It runs before the SFT cold
start (``init_from``/``model.path`` of the SFT stage = this stage's ``out_dir/model``), so the
cold-started model carries a competing habit temperature sampling can resurface. With
``prior.align_steps`` its first steps draw from the perception rows alone
(``is_perception_row``), then from the whole mixture in the order it has without them. With
``prior.copy_steps`` a language stage of text-only copy runs (``paravt.data.synth.copy_runs``)
comes before both, at a constant learning rate after its warm-up; the stages after it run the
batches they have without it and the schedule of a run of ``steps - copy_steps`` steps (raise
``prior.steps`` by ``copy_steps`` to keep a base's schedule), their count starting at 0 after it.
With ``prior.report_steps`` a report stage of the text report drills alone
(``drills.is_report_drill``) comes after the mixture, at a constant rate after its warm-up (as the
copy stage); the stages before it run the schedule of a run ``report_steps`` shorter, so a base with
the stage is the base without it (``prior.steps`` raised by ``report_steps``) trained on; with
``prior.report_replay`` a share of each of its batches goes on with the mixture's batches.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from paravt.agent.trajectory import Trajectory
from paravt.config.training import report_replay_rows
from paravt.data.synth.copy_runs import copy_pool, copy_row
from paravt.errors import DataError
from paravt.rl.sequence import trace_sequences
from paravt.rl.sft import (
    SFTTrainer,
    batch_indices,
    epoch_permutation,
    lr_scale,
    require_rows,
)
from paravt.rl.trainer import TrainerSettings

if TYPE_CHECKING:
    from paravt.config import TrainConfig, VideoConfig
    from paravt.data.rows import Row
    from paravt.data.synth.prior import Habit
    from paravt.models.chat import ChatCodec
    from paravt.rl.session import PolicySession


Stage = Literal["copy", "align", "mixture", "report"]


@dataclass
class PriorTrainer(SFTTrainer):
    """``SFTTrainer`` on ``paravt.data.synth.prior`` traces, with the ``prior`` config section:
    ``copy_steps`` of copy runs over ``pool``, then ``align_steps`` drawn from ``align`` (the
    perception rows) alone, then the mixture, then ``report_steps`` drawn from ``report`` (the
    report drills), alone or beside a ``report_replay`` share of the mixture's rows."""

    align: list[Trajectory] = field(default_factory=list)
    align_steps: int = 0
    copy_steps: int = 0
    pool: list[int] = field(default_factory=list)  # the copy runs' tokens
    report: list[Trajectory] = field(default_factory=list)
    report_steps: int = 0
    report_replay: float = 0.0  # the share of a report-stage batch from the mixture

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
        examples, align, report = prior_examples(
            rows,
            root,
            session.codec,
            tool_mix=p.tool_mix,
            habit=Habit.of(p),
            seed=p.seed,
            copies=p.habit_copies,
            video=cfg.video,
        )
        if p.align_steps and not align:
            raise DataError(
                f"prior.align_steps={p.align_steps} trains on the perception rows, and "
                f"{cfg.data} holds none (an rl.parquet: habit traces only); point `data` at a "
                "ParaVT-Synth base.parquet or set prior.align_steps to 0"
            )
        if p.report_steps and not report:
            raise DataError(
                f"prior.report_steps={p.report_steps} trains on the report drills, and "
                f"{cfg.data} holds none; point `data` at a ParaVT-Synth base.parquet or set "
                "prior.report_steps to 0"
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
            align=align,
            align_steps=p.align_steps,
            copy_steps=p.copy_steps,
            pool=copy_pool(session.processor.tokenizer) if p.copy_steps else [],
            report=report,
            report_steps=p.report_steps,
            report_replay=p.report_replay,
        )

    def stage(self, step: int) -> tuple[Stage, int]:
        """The stage of ``step`` and the step's count within it (from 0 at the stage's start; the
        alignment stage and the mixture share one count, the schedule's)."""
        if step < self.copy_steps:
            return "copy", step
        later = step - self.copy_steps
        if self.report_steps and later >= self._scheduled:
            return "report", later - self._scheduled
        return ("align" if later < self.align_steps else "mixture"), later

    @property
    def _scheduled(self) -> int:
        """The steps of the alignment stage and the mixture: the schedule's run."""
        return self.total_steps - self.copy_steps - self.report_steps

    def lr_share(self, step: int) -> float:
        """The language and report stages' constant rate after their warm-up; between them, the
        schedule (warm-up, decay) of a run of the steps of neither."""
        name, at = self.stage(step)
        spans = {"copy": self.copy_steps, "report": self.report_steps}
        decay = "constant" if name in spans else self.lr_decay
        return lr_scale(
            at, spans.get(name, self._scheduled), self.warmup_steps, decay, self.min_lr_ratio
        )

    def batch(self, step: int) -> list[Trajectory]:
        """The language stage's copy rows, then the alignment stage's batches (a seeded
        permutation of ``align`` per epoch), then the mixture's as a trainer without the other
        stages has them from its step 0, then the report stage's (a permutation of ``report``; with
        ``report_replay`` that share of the batch first from the mixture's next batch)."""
        name, at = self.stage(step)
        if name == "copy":
            return copy_batch(self.seed, at, self.batch_size, self.pool)
        if name == "mixture":
            return super().batch(at - self.align_steps)
        rows = self.align if name == "align" else self.report
        replay = report_replay_rows(self.batch_size, self.report_replay) if name == "report" else 0
        order = partial(_stage_order, name, self.seed, n=len(rows))
        picks = batch_indices(at, self.batch_size - replay, len(rows), order)
        mixed = super().batch(self._scheduled - self.align_steps + at)[:replay] if replay else []
        return mixed + [rows[i] for i in picks]


def copy_batch(seed: int, step: int, size: int, pool: Sequence[int]) -> list[Trajectory]:
    """``size`` copy rows of ``step`` (a function of ``seed`` and ``step``) as text-only
    sequences the supervised trainer takes."""
    rng = random.Random(f"copy:{seed}:{step}")
    out = []
    for i in range(size):
        ids, mask = copy_row(rng, pool)
        out.append(
            Trajectory(
                episode_id=f"copy-{step}-{i}",
                role="main",
                index=0,
                ids=tuple(ids),
                loss_mask=tuple(mask),
                logprobs=tuple(0.0 for _ in ids),
                videos=(),
                images=(),
                prompt_len=mask.index(1),
                end_reason="answer",
            )
        )
    return out


@lru_cache(maxsize=2)  # batches move forward: the current epoch's and the next
def _stage_order(stage: str, seed: int, epoch: int, n: int) -> list[int]:
    return epoch_permutation(stage, seed, epoch, n)


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
) -> tuple[list[Trajectory], list[Trajectory], list[Trajectory]]:
    """The base stage's training sequences of a ``base.parquet``'s rows (``prior_traces``), frames
    decoded from the videos under ``root`` at ``video``'s overview and crop sizes; and those of
    its perception rows (``is_perception_row``), the alignment stage's, and of its report drills
    (``is_report_drill``), the report stage's."""
    from paravt.data.synth.base import is_perception_row, prior_traces
    from paravt.data.synth.drills import is_report_drill

    traces = prior_traces(rows, tool_mix=tool_mix, habit=habit, seed=seed, copies=copies)
    seqs = trace_sequences(traces, root, codec, video)
    pairs = list(zip(traces, seqs, strict=True))
    return (
        seqs,
        [q for t, q in pairs if is_perception_row(t)],
        [q for t, q in pairs if is_report_drill(t)],
    )
