"""SFT's replay of the simulated base's OWN habit traces (``sft.prior_replay``, docs/repro.md).

An 8B model's pretraining is so much larger than its SFT that its habits survive in the tail of
the cold start (the paper's SFT output writes python calls inside ``<tool_call>``); a tiny base's
die within 25 SFT steps, in its own think context too. A share ``sft.prior_replay`` of the SFT
pool is therefore the base's habit traces: ``prior_rows`` on the prompt rows of
``sft.replay_data`` with the ``prior`` section's habits, seed and copies, i.e. the very traces the
base trained on, drawn without replacement by ``sft.seed`` (ids ``replay-…``). The pool, and so
every batch, stays a function of the data and the seeds: a resumed run sees the same batches."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from paravt.errors import DataError
from paravt.rl.sequence import trace_sequences

if TYPE_CHECKING:
    from paravt.agent.trajectory import Trajectory
    from paravt.config import SFTConfig, TrainConfig
    from paravt.data.rows import SFTRow
    from paravt.data.synth.prior import Habit
    from paravt.models.chat import ChatCodec


def replay_count(share: float, pool: int) -> int:
    """How many replayed traces make ``share`` of a pool that holds ``pool`` SFT examples."""
    return round(share / (1.0 - share) * pool)


def _too_few(sft: SFTConfig, pool: int, available: int) -> DataError | None:
    n = replay_count(sft.prior_replay, pool)
    if n <= available:
        return None
    return DataError(
        f"sft.prior_replay={sft.prior_replay} of {pool} SFT examples needs {n} habit traces; "
        f"{sft.replay_data} gives {available}: lower sft.prior_replay or point sft.replay_data at "
        "a base.parquet with more prompts"
    )


def check_replay_size(sft: SFTConfig, *, copies: int, pool: int) -> None:
    """Before the model loads: ``sft.replay_data`` holds enough prompts (× ``copies`` habit traces
    each) for the replay's share of ``pool`` SFT examples (`DataError` otherwise)."""
    import pyarrow.parquet as pq

    kinds = pq.read_table(str(sft.replay_data), columns=["kind"]).column("kind").to_pylist()
    err = _too_few(sft, pool, kinds.count("rl") * copies)
    if err:
        raise err


def replay_traces(
    path: Path | str,
    *,
    sft: SFTConfig,
    pool: int,
    tool_mix: float,
    habit: Habit,
    prior_seed: int,
    copies: int,
) -> list[SFTRow]:
    """The replayed habit traces for a pool of ``pool`` SFT examples (module docstring); the prior's
    settings are those the base trained with."""
    from paravt.data.rows import RLRow
    from paravt.data.schema import read_rows
    from paravt.data.synth.prior import prior_rows

    if sft.prior_replay <= 0:
        return []
    prompts = [r for r in read_rows(Path(path)) if isinstance(r, RLRow)]
    traces = prior_rows(prompts, tool_mix=tool_mix, habit=habit, seed=prior_seed, copies=copies)
    err = _too_few(sft, pool, len(traces))
    if err:
        raise err
    rng = random.Random(f"sft-replay:{sft.seed}")
    pick = sorted(rng.sample(range(len(traces)), replay_count(sft.prior_replay, pool)))
    return [replace(traces[i], id=f"replay-{traces[i].id}") for i in pick]


def replay_examples(cfg: TrainConfig, codec: ChatCodec, *, pool: int) -> list[Trajectory]:
    """``replay_traces`` of ``cfg`` as training sequences; frames from the videos beside
    ``sft.replay_data`` (a base.parquet's video paths are relative to its own folder)."""
    from paravt.data.synth.prior import Habit

    s, p = cfg.sft, cfg.prior
    if s.prior_replay <= 0 or not s.replay_data:
        return []
    traces = replay_traces(
        s.replay_data,
        sft=s,
        pool=pool,
        tool_mix=p.tool_mix,
        habit=Habit.of(p),
        prior_seed=p.seed,
        copies=p.habit_copies,
    )
    return trace_sequences(
        traces,
        Path(s.replay_data).parent,
        codec,
        cfg.video,
        source=s.replay_data,
        mask_think_prefix=s.mask_think_prefix,
    )
