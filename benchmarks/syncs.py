"""Device→host syncs per SFT step, per GRPO update and per decode step (``paravt.models.syncs``).

Counted on any device by the op (a CPU run counts what a GPU would pay): the tiny ``s`` model and
the base's rows with video of ``benchmarks/row_build.py`` (cached under ``--out``). Only the part
that runs on the device is counted: the SFT step's and the update's forward, backward and
optimizer step (their micro-batches are built first, on the host), and the generator's forwards.

- SFT: ``sft_backward`` + ``optimizer_step`` on 8 rows;
- update: ``ppo_update`` on 8 rows, 1 PPO epoch, with a reference model;
- decode: a batched greedy ``HFGenerator`` call on ``--rows`` prompts, run for 8 and for 32
  tokens: the syncs per decode step (the difference) and per call (the rows' prefill).

    nice -n 19 .venv/bin/python benchmarks/syncs.py [--out runs/row_build] [--rows 8]

The last line is JSON; ``measure_passes`` / ``measure_decode`` serve ``benchmarks/limits.py``.
"""

from __future__ import annotations

import argparse
import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from paravt.models.syncs import SyncCounter


def _count_sft(
    model: Any, processor: Any, optimizer: Any, rows: Sequence[Any], device: str | None = None
) -> SyncCounter:
    from paravt.rl import batch as batch_mod
    from paravt.rl.optim_step import optimizer_step
    from paravt.rl.sft import sft_backward

    dev = next(model.parameters()).device
    built = batch_mod.micro_batches(
        processor, rows, batch_mod.DEFAULT_MICRO_BATCH_TOKENS, dev, model=model
    )
    real = batch_mod.micro_batches
    import paravt.rl.sft as sft_mod

    sft_mod.micro_batches = lambda *a, **k: built  # type: ignore[assignment]  # host prep done
    try:
        optimizer.zero_grad(set_to_none=True)
        with SyncCounter(device, depth=3) as c:
            out = sft_backward(model, processor, rows)
            optimizer_step(model, optimizer, 1.0, out.loss)
    finally:
        sft_mod.micro_batches = real
    return c


def _count_update(
    model: Any,
    ref: Any,
    processor: Any,
    optimizer: Any,
    rows: Sequence[Any],
    device: str | None = None,
) -> SyncCounter:
    import paravt.rl.update as upd
    from batch_bench import items_from_rows
    from paravt.rl import batch as batch_mod
    from paravt.rl.loss import ClipKL
    from paravt.rl.update import UpdatePasses

    items = items_from_rows(list(rows))
    trajs = [it.traj for it in items if it.traj.n_sampled > 0]
    built = batch_mod.micro_batches(
        processor,
        trajs,
        batch_mod.DEFAULT_MICRO_BATCH_TOKENS,
        next(model.parameters()).device,
        model=model,
    )
    real = upd.micro_batches
    upd.micro_batches = lambda *a, **k: built  # type: ignore[assignment]
    try:
        with SyncCounter(device, depth=3) as c:
            upd.ppo_update(
                model,
                processor,
                optimizer,
                items,
                clip=ClipKL(clip_eps=0.2, kl_coef=0.01, kl_kind="k3"),
                passes=UpdatePasses(max_grad_norm=1.0),
                ref_model=ref,
            )
    finally:
        upd.micro_batches = real
    return c


def measure_passes(
    model: Any, processor: Any, rows: Sequence[Any], device: str | None = None
) -> dict[str, Any]:
    """Syncs of one SFT step and one GRPO update on ``rows`` (copies of the model train);
    ``device``: count only ops on that device type (``SyncCounter``)."""
    model = copy.deepcopy(model).train()
    ref = copy.deepcopy(model).eval()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    _count_sft(model, processor, optimizer, rows)  # warm-up: feature cache, positions, state
    sft = _count_sft(model, processor, optimizer, rows, device)
    update = _count_update(model, ref, processor, optimizer, rows, device)
    return {
        "sft_step": sft.to_json() | {"rows": len(rows)},
        "grpo_update": update.to_json() | {"rows": len(rows)},
    }


def measure_decode(
    policy: Any, prompts: Sequence[Any], new_tokens: int = 32, device: str | None = None
) -> dict[str, Any]:
    """Syncs of a greedy batched ``generate`` of ``prompts`` (``GenRequest``s), split by two runs
    of ``new_tokens`` and ``new_tokens // 4`` tokens: per decode step (the difference over the
    extra forwards) and per call (the prefill of the rows, the rest)."""
    from dataclasses import replace

    from paravt.models.hf.generator import HFGenerator

    gen = HFGenerator(policy)

    def run(n: int) -> tuple[SyncCounter, int]:
        reqs = [replace(p, sampling=replace(p.sampling, max_new_tokens=n)) for p in prompts]
        before = gen.decode_stats().forwards
        with SyncCounter(device, depth=3) as c:
            gen.run_batch(reqs)  # the batch path in THIS thread (the modes are per thread)
        return c, gen.decode_stats().forwards - before

    run(new_tokens)  # warm-up
    (short, f_short), (long, f_long) = run(max(1, new_tokens // 4)), run(new_tokens)
    per_step = (long.total - short.total) / max(1, f_long - f_short)
    return {
        "per_decode_step": per_step,
        "per_call": long.total - per_step * f_long,
        "forwards": f_long,
        "rows": len(prompts),
        "total": long.total / f_long,
        "by_kind": long.to_json(per=f_long)["by_kind"],
        "sites": long.to_json(per=f_long)["sites"],
    }


def prompts_of(codec: Any, rows: Sequence[Any]) -> list[Any]:
    """A generation request per row: its messages up to the first sampled token."""
    from paravt.models.base import GenRequest, SamplingParams

    out = []
    for t in rows:
        first = next(i for i, m in enumerate(t.loss_mask) if m)
        out.append(
            GenRequest(
                prompt_ids=tuple(t.ids[:first]),
                messages=(),
                videos=tuple(t.videos),
                images=tuple(t.images),
                sampling=SamplingParams(temperature=0.0),
            )
        )
    return out


def main() -> None:
    import row_build
    import train_positions
    from paravt.models.chat import ChatCodec
    from paravt.models.hf.loading import load_policy

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("runs/row_build"), help="row_build.py's data")
    ap.add_argument("--videos", type=int, default=16, help="videos of the synth, when built here")
    ap.add_argument("--rows", type=int, default=8, help="rows of a step and of the decode batch")
    a = ap.parse_args()
    out = row_build.ensure_data(a.out, a.videos)
    policy = load_policy(str(out / "init"))
    codec = ChatCodec(policy.processor)
    rows = train_positions._rows(out, codec, a.rows)
    res = measure_passes(policy.model, policy.processor, rows)
    res["decode_step"] = measure_decode(policy, prompts_of(codec, rows))
    for k, v in res.items():
        print(f"{k}: {v['total']:.1f} syncs ({v['by_kind']}); top sites {v['sites']}")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
