"""The trainer's per-row time, its host syncs and the rollout's rows per forward on one device.

For ``benchmarks/gpu_checks.sh``: the same measurements on the CPU and on a lent GPU, one JSON
line each, and ``--table`` writes the table of every JSON file given into docs/performance.md
(between the markers of its section "On a GPU: the hot path beside the CPU").

Workload: the tiny ``s`` model and the base's rows with video of ``benchmarks/row_build.py``
(built and cached under ``--out``), on ``--device`` in ``--dtype``:

- ``sft_s_per_row`` / ``update_s_per_row``: one SFT step (forward + backward + AdamW) and one
  GRPO update (1 PPO epoch + the reference pass) on ``--batch`` rows, median of ``--repeats``,
  divided by the rows;
- ``syncs``: device→host syncs of one SFT step, one update and a decode step
  (``benchmarks/syncs.py``; on CUDA only ops on CUDA tensors count);
- ``rows_per_forward``: ``--batch`` rows decoding together through the continuous scheduler, rows
  joining at different times (``HFGenerator.decode_stats``).

    python benchmarks/device_table.py --device cuda --out runs/row_build > cuda.json
    python benchmarks/device_table.py --table cpu.json cuda.json --doc docs/performance.md
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

BEGIN, END = "<!-- device-table:begin -->", "<!-- device-table:end -->"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(fn: Any, device: torch.device, repeats: int) -> float:
    fn()  # warm-up: feature cache, positions, optimizer state, kernels
    times = []
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def trainer_times(
    model: Any, processor: Any, rows: Sequence[Any], repeats: int
) -> dict[str, float]:
    """Seconds per row of an SFT step and of a GRPO update on ``rows``."""
    from batch_bench import items_from_rows
    from paravt.rl.loss import ClipKL
    from paravt.rl.optim_step import optimizer_step
    from paravt.rl.sft import sft_backward
    from paravt.rl.update import UpdatePasses, ppo_update

    device = next(model.parameters()).device
    model = copy.deepcopy(model).train()
    ref = copy.deepcopy(model).eval()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    items = items_from_rows(list(rows))

    def sft() -> None:
        opt.zero_grad(set_to_none=True)
        optimizer_step(model, opt, 1.0, sft_backward(model, processor, rows).loss)

    def update() -> None:
        ppo_update(
            model,
            processor,
            opt,
            items,
            clip=ClipKL(clip_eps=0.2, kl_coef=0.01, kl_kind="k3"),
            passes=UpdatePasses(max_grad_norm=1.0),
            ref_model=ref,
        )

    n = len(rows)
    return {
        "sft_s_per_row": _timed(sft, device, repeats) / n,
        "update_s_per_row": _timed(update, device, repeats) / n,
    }


def rows_per_forward(policy: Any, prompts: Sequence[Any], new_tokens: int = 24) -> float:
    """Generated tokens / token-producing forwards when ``prompts`` arrive in two waves (the second
    while the first decodes) at the continuous scheduler."""
    from paravt.models.hf.generator import HFGenerator

    gen = HFGenerator(policy, continuous=True)
    reqs = [replace(p, sampling=replace(p.sampling, max_new_tokens=new_tokens)) for p in prompts]
    half = len(reqs) // 2

    async def run() -> None:
        first = asyncio.ensure_future(gen.generate(reqs[:half]))
        await asyncio.sleep(0.05)
        await asyncio.gather(first, gen.generate(reqs[half:]))
        await gen.aclose()

    asyncio.run(run())
    s = gen.decode_stats()
    return s.rows / max(1, s.forwards)


def measure(
    out: Path, device: str, dtype: str, batch: int, repeats: int, videos: int = 16
) -> dict[str, Any]:
    import row_build
    import syncs
    import train_positions
    from paravt.models.chat import ChatCodec
    from paravt.models.hf.loading import load_policy

    policy = load_policy(
        str(row_build.ensure_data(out, videos) / "init"), device=device, dtype=dtype
    )
    codec = ChatCodec(policy.processor)
    rows = train_positions._rows(out, codec, batch)
    prompts = syncs.prompts_of(codec, rows)
    dev = None if device == "cpu" else device.split(":")[0]
    res: dict[str, Any] = {"device": device, "dtype": dtype, "batch": len(rows)}
    if device != "cpu":
        res["device_name"] = torch.cuda.get_device_name(0)
    res |= trainer_times(policy.model, policy.processor, rows, repeats)
    counted = syncs.measure_passes(policy.model, policy.processor, rows, device=dev)
    counted["decode_step"] = syncs.measure_decode(policy, prompts, device=dev)
    res["syncs"] = {k: v["total"] for k, v in counted.items()}
    res["syncs"]["per_decode_step"] = counted["decode_step"]["per_decode_step"]
    res["rows_per_forward"] = rows_per_forward(policy, prompts)
    res["threads"] = torch.get_num_threads()
    return res


def table(results: Sequence[dict[str, Any]]) -> str:
    """A markdown table, one column per result (device)."""
    cols = [
        f"{r['device']} ({r.get('device_name') or str(r['threads']) + ' threads'})" for r in results
    ]
    lines = ["| | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    rows = (
        ("SFT step, s per row", lambda r: f"{r['sft_s_per_row']:.4f}"),
        ("GRPO update, s per row", lambda r: f"{r['update_s_per_row']:.4f}"),
        ("syncs per SFT step", lambda r: f"{r['syncs']['sft_step']:.0f}"),
        ("syncs per update", lambda r: f"{r['syncs']['grpo_update']:.0f}"),
        ("syncs per decode step", lambda r: f"{r['syncs']['per_decode_step']:.1f}"),
        ("rows per decode forward", lambda r: f"{r['rows_per_forward']:.2f}"),
    )
    for name, cell in rows:
        lines.append(f"| {name} | " + " | ".join(cell(r) for r in results) + " |")
    batch = ", ".join(str(b) for b in sorted({r["batch"] for r in results}))
    dtypes = ", ".join(r["dtype"] for r in results)
    lines += ["", f"Batch of {batch} rows; dtype {dtypes} (`benchmarks/gpu_checks.sh`)."]
    return "\n".join(lines)


def write_table(doc: Path, text: str) -> None:
    """Replace what stands between the markers of ``doc`` (appended with them when absent)."""
    body = doc.read_text() if doc.exists() else ""
    block = f"{BEGIN}\n{text}\n{END}"
    if BEGIN in body and END in body:
        head, rest = body.split(BEGIN, 1)
        body = head + block + rest.split(END, 1)[1]
    else:
        body = body.rstrip("\n") + "\n\n" + block + "\n"
    doc.write_text(body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("runs/row_build"), help="row_build.py's data")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--batch", type=int, default=32, help="rows of a training step")
    ap.add_argument("--videos", type=int, default=16, help="videos of the synth, when built here")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--table", nargs="+", type=Path, help="JSON results: write their table")
    ap.add_argument("--doc", type=Path, default=Path("docs/performance.md"))
    a = ap.parse_args()
    if a.table:
        write_table(a.doc, table([json.loads(p.read_text()) for p in a.table]))
        return
    print(json.dumps(measure(a.out, a.device, a.dtype, a.batch, a.repeats, a.videos)))


if __name__ == "__main__":
    main()
