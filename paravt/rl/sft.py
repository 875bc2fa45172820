"""SFT cold start on parallel tool traces (the main agent's rows and a seeded share
``sft.subagent_rows`` of the sub-agents', 0 by default as the paper's pool), and, with
``sft.prior_replay``, a share of the simulated base's own habit traces (``paravt.rl.replay``);
``sft.tool_prompt_direct`` trains a share of the direct traces under the tool prompt
(``paravt.rl.direct``).

Sequences are built exactly as an episode builds its trajectory (``paravt.rl.sequence``). SFT
teaches the format the think prefix later
constrains: the prefix is an RL-time constraint ("reinforces what SFT has already taught"), so a
model sampled without it must still open ``<think>`` itself. ``sft.mask_think_prefix`` (off by
default) puts the ``<think>\\n`` into the prompt instead, as a forced prefix — for experiments only.
Frames come from the same decoder and sampling
recipe as at rollout, through ``paravt.data`` (``to_chat_messages``).
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from paravt.agent.inputs import MAX_ROW_BYTES
from paravt.agent.trajectory import Trajectory
from paravt.errors import ConfigError, DataError
from paravt.models.chat import ChatCodec
from paravt.rl.batch import DEFAULT_MICRO_BATCH_TOKENS, micro_batches, score, vision_ids
from paravt.rl.direct import ToolPromptDirect, seeded_share
from paravt.rl.mfu import Mfu
from paravt.rl.optim_step import optimizer_step
from paravt.rl.sequence import trace_sequences
from paravt.rl.trainer import TrainerSettings
from paravt.rl.update import trajectory_logprobs

if TYPE_CHECKING:
    from paravt.config import LossAgg, LrDecay, TrainConfig, VideoConfig
    from paravt.data.rows import Row
    from paravt.data.screen import Screened
    from paravt.rl.session import PolicySession

#: The fix when an SFT data file holds no trace (the one text: `check_data` and `build`).
NO_TRACES_FIX = (
    "point `data` at a ParaVT-Synth sft.parquet (`paravt data synth`); an rl.parquet holds "
    "prompts only, for `paravt train rl`"
)


def require_rows(path: str | Path, kinds: Collection[str], what: str, fix: str) -> None:
    """`DataError` naming ``path`` when none of its rows has a ``kind`` in ``kinds`` (only that
    column is read: the trainers check their data with this before a model loads)."""
    import pyarrow.parquet as pq

    from paravt.data.schema import check_columns, check_dataset

    p = check_dataset(path)
    check_columns(p)  # a missing or mistyped column, named
    found = Counter(pq.read_table(str(p), columns=["kind"]).column("kind").to_pylist())
    if not any(found[k] for k in kinds):
        have = ", ".join(f"{n} of kind {k}" for k, n in sorted(found.items())) or "none"
        raise DataError(
            f"{p} holds no {what} (rows of kind {' or '.join(kinds)}; its rows: {have}); {fix}"
        )


def screen_data(cfg: TrainConfig, kinds: Collection[str]) -> Screened:
    """``cfg.data`` screened once, before the model loads (`paravt.data.screen`): a warning per
    cause of error rows, which are listed in ``OUT/data_errors.json``; `DataError` when no row is
    usable."""
    from paravt.data.screen import screen_rows, write_data_errors

    screened = screen_rows(cfg.data, cfg.data_root, kinds=kinds, max_row_bytes=cfg.max_row_bytes)
    write_data_errors(cfg.out_dir, screened)
    return screened


@dataclass(frozen=True)
class SFTLoss:
    loss: float  # NLL over the assistant (loss-mask 1) tokens of the batch, as ``loss_agg`` says
    n_tokens: int  # those tokens
    # token-means over them (batched path; NaN on the per-sequence one): the entropy of the
    # model's distribution, and the share of tokens that are its most likely one (TRL's
    # ``entropy`` and ``mean_token_accuracy``)
    entropy: float = math.nan
    token_accuracy: float = math.nan


def _batch_loss(
    lp: torch.Tensor, rows: Sequence[Trajectory], agg: LossAgg, *, n_rows: int, n_tokens: int
) -> torch.Tensor:
    """The share of the batch's loss that the tokens ``lp`` (of ``rows``, in order) carry."""
    if agg == "token-mean":
        return -lp.sum() / n_tokens  # token-mean over the whole batch
    # each row's token-mean, then the mean over the batch's rows (built on the device: no copy)
    w = torch.cat(
        [torch.full((t.n_sampled,), 1.0 / (n_rows * t.n_sampled), device=lp.device) for t in rows]
    )
    return -(lp * w.to(lp.dtype)).sum()


def sft_backward(
    model: Any,
    processor: Any,
    batch: Sequence[Trajectory],
    *,
    batched: bool = True,
    micro_batch_tokens: int = DEFAULT_MICRO_BATCH_TOKENS,
    loss_agg: LossAgg = "token-mean",
) -> SFTLoss:
    """Accumulate into ``.grad`` the gradient of the batch's NLL (logits at τ = 1, vision
    placeholder ids suppressed, as the generator samples), aggregated by ``loss_agg``: the mean
    over every loss token of the batch (``token-mean``) or the mean over the rows of each row's
    token-mean (``seq-mean-token-mean``: a long row weighs what a short one does). ``batched``:
    right-padded micro-batches of at most ``micro_batch_tokens`` padded tokens with their media
    (``paravt.rl.batch``); else one forward per sequence (the equivalence oracle and the speed
    baseline). Entropy and token accuracy are token-means either way."""
    batch = [t for t in batch if t.n_sampled > 0]
    total = sum(t.n_sampled for t in batch)

    Part = tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None, Sequence[Trajectory]]
    if batched:
        device = next(model.parameters()).device
        suppress = vision_ids(processor)
        parts: Iterator[Part] = (
            (s.logprobs, s.entropy, s.correct, [batch[r] for r in mb.rows])
            for mb in micro_batches(processor, batch, micro_batch_tokens, device, model=model)
            for s in (score(model, mb, suppress_ids=suppress, entropy=True),)
        )  # (N,) each
    else:
        parts = ((trajectory_logprobs(model, processor, t), None, None, [t]) for t in batch)  # (P,)
    # float64 sums on the device (nll, entropy, correct): one read for the whole batch
    sums: torch.Tensor | None = None
    for lp, ent, hit, rows in parts:
        loss = _batch_loss(lp, rows, loss_agg, n_rows=len(batch), n_tokens=total)
        loss.backward()
        nan = torch.full((), math.nan, dtype=torch.float64, device=lp.device)
        part = torch.stack(
            [
                loss.detach().double(),
                nan if ent is None else ent.sum().double() / total,
                nan if hit is None else hit.sum().double() / total,
            ]
        )
        sums = part if sums is None else sums + part
    if sums is None:
        return SFTLoss(0.0, total)
    nll, ent_mean, acc = sums.tolist()
    return SFTLoss(nll, total, ent_mean, acc)


@dataclass
class SFTTrainer:
    """Supervised cold start (``paravt.rl.trainer.Trainer``): the NLL over the assistant tokens of
    a seeded batch (``loss_agg``), linear warm-up of the learning rate."""

    examples: list[Trajectory]
    model: Any
    processor: Any
    optimizer: torch.optim.Optimizer
    batch_size: int
    max_grad_norm: float
    total_steps: int
    lr: float
    warmup_steps: int = 0
    seed: int = 0
    micro_batch_tokens: int = DEFAULT_MICRO_BATCH_TOKENS
    lr_decay: LrDecay = "constant"
    min_lr_ratio: float = 0.1
    loss_agg: LossAgg = "token-mean"
    _mfu: Mfu = field(init=False, repr=False)  # train/mfu (its limit measured here, once)
    # the epochs' permutations, drawn once each (a fresh shuffle per example was 19 % of a base
    # step: docs/performance.md, "The base build")
    _perms: dict[int, list[int]] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._mfu = Mfu.of(self.model)

    @classmethod
    def trainer_settings(cls, cfg: TrainConfig) -> TrainerSettings:
        return TrainerSettings(
            optim=cfg.sft,
            seed=cfg.sft.seed,
            save_every=cfg.sft.save_every,
            generate=False,
            reference=False,
        )

    @classmethod
    def check_data(cls, cfg: TrainConfig) -> None:
        kinds = sft_kinds(cfg.sft.subagent_rows)
        require_rows(
            cfg.data,
            kinds,
            "SFT traces",
            NO_TRACES_FIX
            + ("" if "sub" in kinds else "; sub-agent rows train only with sft.subagent_rows > 0"),
        )
        screened = screen_data(cfg, kinds)
        move = ToolPromptDirect.of(cfg)
        if move is not None:  # its DataError (no direct traces) before the model loads
            move.apply(screened.rows)
        if cfg.sft.prior_replay > 0:  # the config requires replay_data with a share
            from paravt.rl.replay import check_replay_size

            require_rows(
                str(cfg.sft.replay_data),
                ("rl",),
                f"prompts for sft.prior_replay={cfg.sft.prior_replay} (the base's habit traces)",
                "point sft.replay_data at the base's ParaVT-Synth base.parquet",
            )
            pool = pick_subagent_rows(screened.rows, cfg.sft.subagent_rows, cfg.sft.seed)
            check_replay_size(cfg.sft, copies=cfg.prior.habit_copies, pool=len(pool))

    @classmethod
    def build(cls, cfg: TrainConfig, session: PolicySession) -> SFTTrainer:
        examples = load_examples(
            Path(cfg.data),
            Path(cfg.data_root) if cfg.data_root else None,
            session.codec,
            cfg.video,
            subagent_rows=cfg.sft.subagent_rows,
            seed=cfg.sft.seed,
            mask_think_prefix=cfg.sft.mask_think_prefix,
            max_row_bytes=cfg.max_row_bytes,
            tool_prompt_direct=ToolPromptDirect.of(cfg),
        )
        if not examples:  # `check_data` refuses such a file before the model loads
            raise DataError(f"{cfg.data} holds no SFT traces; {NO_TRACES_FIX}")
        if cfg.sft.prior_replay > 0:  # the base's own habit traces join the pool
            from paravt.rl.replay import replay_examples

            examples += replay_examples(cfg, session.codec, pool=len(examples))
        per_epoch = math.ceil(len(examples) / cfg.sft.batch_size)
        total = per_epoch * cfg.sft.epochs
        return cls(
            examples,
            session.model,
            session.processor,
            session.optimizer,
            cfg.sft.batch_size,
            cfg.sft.max_grad_norm,
            total_steps=min(total, cfg.sft.max_steps or total),
            lr=cfg.sft.lr,
            warmup_steps=cfg.sft.warmup_steps,
            seed=cfg.sft.seed,
            micro_batch_tokens=cfg.sft.micro_batch_tokens,
            loss_agg=cfg.sft.loss_agg,
        )

    def state_dict(self) -> dict[str, Any]:
        return {}  # batches are a function of (seed, step)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        pass

    def describe(self, metrics: Mapping[str, float]) -> str:
        return f"loss={metrics.get('train/loss', 0):.3f}"

    def rollouts(self) -> list[dict[str, Any]]:
        return []  # SFT samples nothing

    def lr_share(self, step: int) -> float:
        """The learning rate of ``step`` as a share of ``lr`` (``lr_scale``)."""
        return lr_scale(step, self.total_steps, self.warmup_steps, self.lr_decay, self.min_lr_ratio)

    def _set_lr(self, step: int) -> None:
        for g in self.optimizer.param_groups:
            g["lr"] = self.lr * self.lr_share(step)

    def batch(self, step: int) -> list[Trajectory]:
        """Deterministic batches: a seeded permutation per epoch, indexed by step."""
        return [
            self.examples[i]
            for i in batch_indices(step, self.batch_size, len(self.examples), self.epoch_order)
        ]

    def epoch_order(self, epoch: int) -> list[int]:
        """The seeded permutation of the examples in ``epoch`` (drawn once, then kept)."""
        if epoch not in self._perms:  # batches move forward: only the current epoch is kept
            self._perms = {epoch: epoch_permutation("sft", self.seed, epoch, len(self.examples))}
        return self._perms[epoch]

    def step(self, step: int) -> dict[str, float]:
        """One optimizer step; verl's SFT names (``train/*``) where verl has one, TRL's
        ``entropy`` and ``mean_token_accuracy`` (docs/tracking.md)."""
        t0 = time.perf_counter()
        self._set_lr(step)
        self.optimizer.zero_grad(set_to_none=True)
        batch = self.batch(step)
        out = sft_backward(
            self.model,
            self.processor,
            batch,
            micro_batch_tokens=self.micro_batch_tokens,
            loss_agg=self.loss_agg,
        )
        res = optimizer_step(self.model, self.optimizer, self.max_grad_norm, out.loss)
        took = time.perf_counter() - t0
        return {
            "train/loss": out.loss,
            "train/grad_norm": res.grad_norm,
            "train/lr": self.optimizer.param_groups[0]["lr"],
            "entropy": out.entropy,
            "mean_token_accuracy": out.token_accuracy,
            "tokens/trained": float(out.n_tokens),
            "update_skipped": float(res.skipped),
            "training/epoch": step * self.batch_size / max(1, len(self.examples)),
            **self._mfu.metrics("train/mfu", [len(t.ids) for t in batch], took),
        }


def epoch_permutation(tag: str, seed: int, epoch: int, n: int) -> list[int]:
    """The seeded permutation of ``n`` examples in ``epoch`` of the batches named ``tag``."""
    perm = list(range(n))
    random.Random(f"{tag}:{seed}:{epoch}").shuffle(perm)
    return perm


def batch_indices(
    step: int, batch_size: int, n: int, epoch_order: Callable[[int], Sequence[int]]
) -> list[int]:
    """The indices of ``step``'s batch: picks ``step × batch_size`` onwards through the epochs'
    permutations of ``n`` examples (``epoch_order(epoch)``), across epoch boundaries."""
    out = []
    for j in range(step * batch_size, (step + 1) * batch_size):
        epoch, pos = divmod(j, n)
        out.append(epoch_order(epoch)[pos])
    return out


def lr_scale(
    step: int, total_steps: int, warmup_steps: int, decay: LrDecay, min_ratio: float
) -> float:
    """The learning rate of 0-based ``step`` as a share of the peak: linear warm-up over
    ``warmup_steps``, then constant or cosine from 1 down to ``min_ratio`` at the last step."""
    if warmup_steps > 0 and step < warmup_steps:
        return (step + 1) / warmup_steps
    if decay == "constant":
        return 1.0
    span = max(1, total_steps - 1 - warmup_steps)
    progress = min(1.0, (step - warmup_steps) / span)
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def load_examples(
    path: Path,
    root: Path | None,
    codec: ChatCodec,
    video: VideoConfig,
    *,
    subagent_rows: float,
    seed: int,
    mask_think_prefix: bool = False,
    max_row_bytes: int = MAX_ROW_BYTES,
    tool_prompt_direct: ToolPromptDirect | None = None,
) -> list[Trajectory]:
    """Every usable main SFT row of a parquet file as a training sequence (the rows `screen_data`
    passed: error rows are never trained on; frames as `trace_sequences` decodes them), with a
    share ``subagent_rows`` of its sub-agent rows drawn by ``seed`` (`pick_subagent_rows`), and a
    share of its direct traces under the tool prompt when ``tool_prompt_direct`` says so
    (``paravt.rl.direct``)."""
    from paravt.data.screen import screen_rows

    root = Path(root) if root else Path(path).parent
    kinds = sft_kinds(subagent_rows)
    rows = list(screen_rows(path, root, kinds=kinds, max_row_bytes=max_row_bytes, warn=False).rows)
    rows = pick_subagent_rows(rows, subagent_rows, seed)
    if tool_prompt_direct is not None:
        rows = tool_prompt_direct.apply(rows)
    return trace_sequences(
        rows, root, codec, video, source=path, mask_think_prefix=mask_think_prefix
    )


def sft_kinds(subagent_rows: float) -> tuple[str, ...]:
    """The row kinds SFT reads: the main agent's, and the sub-agents' when a share of them
    trains (``sft.subagent_rows`` > 0)."""
    return ("main", "sub") if subagent_rows > 0 else ("main",)


def pick_subagent_rows(rows: Sequence[Row], share: float, seed: int) -> list[Row]:
    """``rows`` with every main row and a seeded ``share`` of the sub-agent rows (round(share ×
    count) of them, at least one when the share is > 0), in their order: the same draw for the
    same rows and seed."""
    if not 0.0 <= share <= 1.0:
        raise ConfigError(f"sft.subagent_rows={share}: set a share in [0, 1] (0: main rows only)")
    sub = [i for i, r in enumerate(rows) if r.kind == "sub"]
    keep = seeded_share(sub, share, f"sft-subagent-rows:{seed}")
    return [r for i, r in enumerate(rows) if r.kind != "sub" or i in keep]
