"""Where the time of a PARA-GRPO step goes, on the CPU with a tiny Qwen3-VL.

Builds a tiny random model and a small ParaVT-Synth set in a temp dir, then runs ``--steps`` GRPO
steps with the single-process trainer (``paravt.rl.grpo.GRPOTrainer``; the same ``step``
``run_training`` calls, without logging and checkpoints). For each step it reports the trainer's own
``timing_s/gen``, ``timing_s/reward`` and ``timing_s/ref`` + ``timing_s/update_actor`` metrics, and
how much of the step was MODEL COMPUTE: wall time inside ``model.forward`` (policy and reference,
including the forwards ``generate`` makes), ``Tensor.backward`` and ``optimizer.step``, attributed
to the phase that ran them. Everything else — Python orchestration, the processor (patchify,
tokenization), frame decoding, sampling logic in ``generate``, tool calls, reward parsing — is
"outside model compute"; its share is the headline number (the larger it is, the more a faster model
alone would NOT speed training up).

What is not covered: a random tiny model seldom emits tool calls, so rollouts are mostly one main
turn (the tool path is timed by ``benchmarks/dispatch.py``); GPU behaviour (kernel launch, H2D).

    .venv/bin/python benchmarks/train_step.py [--steps 4] [--size xs] [--group-size 4] [--prompts 2]

The first step includes cold video decoding; the summary averages the later steps. The last line
printed is JSON.

``--passes`` times the training passes instead, per-sequence vs batched
(``benchmarks/batch_bench.py``): an SFT step's forward + backward on ``--sft-rows`` rows of the
repro's SFT data (ParaVT-Synth
``sft.parquet``: main and sub-agent traces with their videos, 64² frames) and a GRPO update on
``--update-rows`` of those sequences as rollouts (seeded advantages, KL to a reference copy,
zero-lr SGD), on the tiny qwen3_vl at ``--size`` (default s for this mode), medians of
``--repeats`` alternating runs; the JSON carries ``sft_step_speedup`` and ``update_speedup``.

    .venv/bin/python benchmarks/train_step.py --passes [--size s] [--threads 1] [--repeats 5]
"""

from __future__ import annotations

import argparse
import functools
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

import paravt.rl.grpo as grpo
from paravt.agent.inputs import load_episode_inputs
from paravt.config import TrainConfig
from paravt.data.synth.build import build
from paravt.data.synth.corpus import protocol_corpus
from paravt.models.tiny import build_tiny
from paravt.rl.session import PolicySession


class ComputeClock:
    """Accumulates wall time spent in model compute, per phase (rollout / reward / update)."""

    def __init__(self) -> None:
        self.phase = "other"
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._depth = 0  # nested timed calls (generate → forward → …) are counted once

    def wrap(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return fn(*args, **kwargs)
            self._depth += 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[self.phase] += time.perf_counter() - t0
                self.calls[self.phase] += 1
                self._depth -= 1

        return timed

    def take(self) -> dict[str, float]:
        out = dict(self.seconds)
        self.seconds.clear()
        return out


def _instrument(session: PolicySession, trainer: grpo.GRPOTrainer, clock: ComputeClock) -> None:
    for model in (session.model, session.ref_model):
        if model is not None:
            model.forward = clock.wrap(model.forward)
    session.optimizer.step = clock.wrap(session.optimizer.step)  # type: ignore[method-assign]
    torch.Tensor.backward = clock.wrap(torch.Tensor.backward)  # type: ignore[method-assign]

    rollout = trainer._rollout

    async def timed_rollout(*args: Any, **kwargs: Any):
        clock.phase = "rollout"
        try:
            return await rollout(*args, **kwargs)
        finally:
            clock.phase = "reward"  # rewards follow the rollout inside step()

    trainer._rollout = timed_rollout  # type: ignore[method-assign]
    update = grpo.ppo_update

    def timed_update(*args: Any, **kwargs: Any):
        clock.phase = "update"
        try:
            return update(*args, **kwargs)
        finally:
            clock.phase = "other"

    grpo.ppo_update = timed_update  # type: ignore[assignment]


def _config(work: Path, model: str, args: argparse.Namespace) -> TrainConfig:
    return TrainConfig.model_validate(
        {
            "out_dir": str(work / "run"),
            "data": str(work / "synth" / "rl.parquet"),
            "model": {"path": model},
            "video": {"overview_max_pixels": 64 * 64, "crop_max_pixels": 64 * 64},
            "sampling": {"max_new_tokens": args.max_new_tokens, "sub_max_new_tokens": 32},
            "rl": {
                "group_size": args.group_size,
                "prompts_per_step": args.prompts,
                "steps": args.steps,
                "lr": 1e-5,
                "drop_zero_variance": False,
            },
        }
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = build_tiny(
            "qwen3_vl", args.size or "xs", work / "model", corpus=protocol_corpus()
        ).path
        build(work / "synth", videos=args.videos, eval_videos=0, seed=0, workers=1)
        cfg = _config(work, model, args)
        session = PolicySession.create(
            cfg.model, cfg.rl, rollout=cfg.rollout, reference=model if cfg.rl.kl_coef > 0 else None
        )
        trainer = grpo.GRPOTrainer(cfg, load_episode_inputs(Path(cfg.data)), session)
        clock = ComputeClock()
        _instrument(session, trainer, clock)
        rows = []
        for step in range(args.steps):
            t0 = time.perf_counter()
            m = trainer.run_step(step).metrics
            wall = time.perf_counter() - t0
            c = clock.take()
            rows.append(
                {
                    "step": step + 1,
                    "wall": wall,
                    "rollout": m["timing_s/gen"],
                    "reward": m["timing_s/reward"],
                    "update": m["timing_s/ref"] + m["timing_s/update_actor"],
                    "compute_rollout": c.get("rollout", 0.0),
                    "compute_update": c.get("update", 0.0)
                    + c.get("reward", 0.0)
                    + c.get("other", 0.0),
                    "tokens_generated": m.get("tokens/generated_per_rollout", 0.0),
                    "kappa": m.get("kappa", 0.0),
                    "rollouts": m.get("n", 0.0),
                }
            )
    return {
        "rows": rows,
        "size": args.size or "xs",
        "group_size": args.group_size,
        "prompts": args.prompts,
        "max_new_tokens": args.max_new_tokens,
        "threads": args.threads,
    }


def _summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    warm = rows[1:] or rows
    mean = lambda k: sum(r[k] for r in warm) / len(warm)  # noqa: E731
    wall = mean("wall")
    compute = mean("compute_rollout") + mean("compute_update")
    return {
        "steps_averaged": len(warm),
        "step_s": wall,
        "rollout_s": mean("rollout"),
        "reward_s": mean("reward"),
        "update_s": mean("update"),
        "compute_s": compute,
        "outside_compute_share": 1 - compute / wall,
        "rollout_outside_share": 1 - mean("compute_rollout") / mean("rollout"),
        "update_outside_share": 1 - mean("compute_update") / max(mean("update"), 1e-9),
        "rollout_share_of_step": mean("rollout") / wall,
    }


def render(result: dict[str, Any]) -> None:
    t = Table(
        title=f"GRPO step on the CPU: tiny qwen3_vl-{result['size']}, {result['prompts']} "
        "prompts × "
        f"G={result['group_size']}, ≤{result['max_new_tokens']} new tokens/turn, "
        f"{result['threads']} threads"
    )
    for col in (
        "step",
        "wall s",
        "rollout s",
        "reward s",
        "update s",
        "model compute s",
        "outside compute",
        "rollout outside",
        "update outside",
        "gen tok/rollout",
    ):
        t.add_column(col, justify="right")
    for r in result["rows"]:
        comp = r["compute_rollout"] + r["compute_update"]
        t.add_row(
            str(r["step"]),
            f"{r['wall']:.2f}",
            f"{r['rollout']:.2f}",
            f"{r['reward']:.4f}",
            f"{r['update']:.2f}",
            f"{comp:.2f}",
            f"{1 - comp / r['wall']:.0%}",
            f"{1 - r['compute_rollout'] / r['rollout']:.0%}",
            f"{1 - r['compute_update'] / max(r['update'], 1e-9):.0%}",
            f"{r['tokens_generated']:.0f}",
        )
    s = result["summary"]
    t.add_row(
        f"mean {s['steps_averaged']}",
        f"{s['step_s']:.2f}",
        f"{s['rollout_s']:.2f}",
        f"{s['reward_s']:.4f}",
        f"{s['update_s']:.2f}",
        f"{s['compute_s']:.2f}",
        f"{s['outside_compute_share']:.0%}",
        f"{s['rollout_outside_share']:.0%}",
        f"{s['update_outside_share']:.0%}",
        "",
        style="bold",
    )
    Console().print(t)


def run_passes(args: argparse.Namespace) -> dict[str, Any]:
    import copy
    import random
    import statistics

    from batch_bench import compare_passes, items_from_rows
    from paravt.config import VideoConfig
    from paravt.models.chat import ChatCodec
    from paravt.models.hf.loading import load_policy
    from paravt.rl.sft import load_examples

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        policy = load_policy(
            build_tiny("qwen3_vl", args.size or "s", work / "model", corpus=protocol_corpus()).path
        )
        build(work / "synth", videos=args.videos, eval_videos=0, seed=0, workers=1)
        rows = load_examples(
            work / "synth" / "sft.parquet",
            None,
            ChatCodec(policy.processor),
            VideoConfig(overview_max_pixels=64 * 64, crop_max_pixels=64 * 64, size_factor=32),
            subagent_rows=1.0,
            seed=0,
        )
        random.Random(0).shuffle(rows)
        need = args.sft_rows + args.update_rows
        if len(rows) < need:
            raise SystemExit(
                f"{len(rows)} SFT rows from {args.videos} videos, need {need}: raise --videos"
            )
        ref = copy.deepcopy(policy.model).eval()
        cmp = compare_passes(
            policy.model,
            policy.processor,
            rows[: args.sft_rows],
            items_from_rows(rows[args.sft_rows : need]),
            ref_model=ref,
            repeats=args.repeats,
            micro_batch_tokens=args.micro_batch_tokens,
        )
        update_len = statistics.fmean(len(t.ids) for t in rows[args.sft_rows : need])
    return {
        **cmp.to_json(),
        "update_tokens_per_row": update_len,
        "size": args.size or "s",
        "threads": args.threads,
        "micro_batch_tokens": args.micro_batch_tokens,
    }


def render_passes(r: dict[str, Any]) -> None:
    t = Table(
        title=f"Training passes, per-sequence vs batched: tiny qwen3_vl-{r['size']}, "
        f"{r['threads']} threads, "
        f"micro-batches ≤ {r['micro_batch_tokens']} padded tokens, medians of {r['sft_repeats']}"
    )
    for col in (
        "pass",
        "rows",
        "tokens/row",
        "per-sequence s",
        "batched s",
        "speed-up",
        "|loss gap|",
    ):
        t.add_column(col, justify="right")
    for name, label, rows, tok in (
        ("sft", "SFT step (fwd + bwd)", r["sft_rows"], r["tokens_per_row"]),
        ("update", "GRPO update", r["update_rows"], r["update_tokens_per_row"]),
    ):
        key = "sft_step_speedup" if name == "sft" else "update_speedup"
        t.add_row(
            label,
            str(rows),
            f"{tok:.0f}",
            f"{r[name + '_per_sequence_s']:.3f}",
            f"{r[name + '_batched_s']:.3f}",
            f"{r[key]:.2f}x",
            f"{r[name + '_loss_gap']:.1e}",
        )
    Console().print(t)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=4)
    p.add_argument(
        "--size", default=None, choices=["xs", "s", "m"], help="default xs (s with --passes)"
    )
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--prompts", type=int, default=2)
    p.add_argument("--videos", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (1: tiny models are overhead-bound; 2 stalls on a busy box)",
    )
    p.add_argument(
        "--passes", action="store_true", help="time the training passes, per-sequence vs batched"
    )
    p.add_argument(
        "--sft-rows",
        type=int,
        default=8,
        help="--passes: rows of the SFT step (the sft batch size)",
    )
    p.add_argument(
        "--update-rows", type=int, default=12, help="--passes: sequences of the GRPO update"
    )
    p.add_argument("--repeats", type=int, default=5, help="--passes: timed runs per path (medians)")
    p.add_argument(
        "--micro-batch-tokens", type=int, default=8192, help="--passes: padded tokens per forward"
    )
    args = p.parse_args()
    if args.passes:
        res = run_passes(args)
        render_passes(res)
        print(json.dumps({"benchmark": "train_passes", **res}))
        return
    result = run(args)
    result["summary"] = _summary(result["rows"])
    render(result)
    print(
        json.dumps(
            {
                "benchmark": "train_step",
                **{k: v for k, v in result.items() if k != "rows"},
                "rows": result["rows"],
            }
        )
    )


if __name__ == "__main__":
    main()
