"""Training passes with and without precomputed M-RoPE positions (``paravt.rl.rope``), on the CPU.

The tiny ``s`` model of ``benchmarks/row_build.py`` (built there and cached under ``--out``) and
the base's rows with video: an SFT step (batch 8: forward + backward + AdamW) and a GRPO update
(2 PPO epochs + the reference pass, 8 rows, seeded advantages), each timed alternately with the
positions precomputed (``micro_batches(..., model=...)``, the default) and with the model computing
them in every forward (the path before issue 33). SFT rows keep their positions across steps (32
rows, 4 steps an epoch: from the fifth step on every row has them); the update's rows are fresh
every step (rollouts), so their cache is cleared before each update. Also counts the
``get_rope_index`` calls of a step and the seconds spent in them (medians over the timed steps).

    nice -n 19 .venv/bin/python benchmarks/train_positions.py [--out runs/row_build] [--steps 6]

The last line is JSON.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import statistics
import time
from pathlib import Path
from typing import Any

import torch

import row_build  # benchmarks/ is the script's directory


def _rows(out: Path, codec: Any, n: int) -> list[Any]:
    from paravt.data.chat import to_chat_messages
    from paravt.data.schema import read_rows
    from paravt.data.synth.base import is_base_row
    from paravt.rl.sequence import build_sequence

    rows = [r for r in read_rows(out / "synth" / "base.parquet") if is_base_row(r) and r.videos][:n]
    return [
        build_sequence(
            to_chat_messages(
                r,
                out / "synth",
                max_pixels=row_build.PIXELS,
                crop_max_pixels=row_build.PIXELS,
                size_factor=row_build.FACTOR,
            ),
            codec,
            row_id=r.id,
        )
        for r in rows
    ]


def _timed(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(out: Path, steps: int) -> dict[str, Any]:
    from batch_bench import items_from_rows
    from paravt.models.chat import ChatCodec
    from paravt.models.hf.loading import load_policy
    from paravt.rl import batch, rope
    from paravt.rl.loss import ClipKL
    from paravt.rl.sft import SFTTrainer
    from paravt.rl.update import UpdatePasses, ppo_update

    policy = load_policy(str(out / "init"))
    model, processor = policy.model, policy.processor
    model.train()
    ref = copy.deepcopy(model).eval()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    rows = _rows(out, ChatCodec(processor), 32)
    trainer = SFTTrainer(rows, model, processor, optimizer, 8, 1.0, total_steps=10_000, lr=1e-5)
    items = items_from_rows(
        [dataclasses.replace(t) for t in rows[:8]]
    )  # rows of their own (own cache entries)
    calls, spent = [0], [0.0]
    inner = type(model.model).get_rope_index

    def counted(self: Any, *a: Any, **k: Any) -> Any:
        calls[0] += 1
        t0 = time.perf_counter()
        try:
            return inner(self, *a, **k)
        finally:
            spent[0] += time.perf_counter() - t0

    type(model.model).get_rope_index = counted
    real = batch.batch_positions
    res: dict[str, list[float]] = {}
    for step in range(steps + 1):
        for mode in ("given", "model"):
            batch.batch_positions = real if mode == "given" else (lambda *a, **k: None)
            c0, r0 = calls[0], spent[0]
            sft = _timed(lambda step=step: trainer.step(step))
            c1, r1 = calls[0], spent[0]
            for it in items:  # rollouts are new rows every step
                rope._CACHE.pop(it.traj, None)
            upd = _timed(
                lambda: ppo_update(
                    model,
                    processor,
                    optimizer,
                    items,
                    clip=ClipKL(clip_eps=0.2, kl_coef=0.01, kl_kind="k3"),
                    passes=UpdatePasses(ppo_epochs=2, max_grad_norm=1.0),
                    ref_model=ref,
                )
            )
            if step:  # step 0 warms up (feature cache, allocator, first positions)
                for k, v in (
                    (f"sft_{mode}_s", sft),
                    (f"update_{mode}_s", upd),
                    (f"sft_{mode}_rope_calls", c1 - c0),
                    (f"update_{mode}_rope_calls", calls[0] - c1),
                    (f"sft_{mode}_rope_s", r1 - r0),
                    (f"update_{mode}_rope_s", spent[0] - r1),
                ):
                    res.setdefault(k, []).append(v)
    batch.batch_positions = real
    med = {k: round(statistics.median(v), 4) for k, v in res.items()}
    med["threads"] = torch.get_num_threads()
    return med


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out", type=Path, default=Path("runs/row_build"), help="data and model of row_build.py"
    )
    ap.add_argument(
        "--videos", type=int, default=16, help="videos of the synth, when it is built here"
    )
    ap.add_argument("--steps", type=int, default=6, help="timed steps of each kind and mode")
    a = ap.parse_args()
    res = measure(row_build.ensure_data(a.out, a.videos), a.steps)
    for kind in ("sft", "update"):
        print(
            f"{kind}: {res[f'{kind}_model_s']:.3f} s a step with the model computing positions "
            f"({res[f'{kind}_model_rope_calls']:.0f} get_rope_index calls, "
            f"{res[f'{kind}_model_rope_s']:.4f} s), "
            f"{res[f'{kind}_given_s']:.3f} s with them precomputed "
            f"({res[f'{kind}_given_rope_calls']:.0f} calls, "
            f"{res[f'{kind}_given_rope_s']:.4f} s)"
        )
    print(json.dumps(res))


if __name__ == "__main__":
    main()
