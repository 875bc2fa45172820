"""Would a second process make the K-call parallel turn ≥ 3× faster than sequential? (issue 14.4)

``benchmarks/dispatch.py`` times the tool part of a turn (K crops, then the K sub-agents in one
batched request) in ONE process. On 2 CPU cores the batched request runs on one of them: the
tiny model's decode steps are Python-bound, and torch threads or Python threads do not help
(docs/performance.md). This script measures the remaining way to use the second core. A worker
process holds its own copy of the policy and serves half of the K windows (crop, sub-agent prompt,
generate), while the main process serves the other half at the same time. Four timings per
repetition, in alternating order:

* ``parallel``: all K windows in this process, as ``Episode`` does (dispatch.py's parallel);
* ``split``: K/2 windows here and K/2 in the worker, concurrently (the pipe round trip included);
* ``half``: K/2 windows in this process alone, which is the ideal split (no pipe, no contention);
* ``sequential``: the K windows one after another (dispatch.py's sequential).

Greedy decoding: the summaries of the four ways are checked to be equal.

    .venv/bin/python benchmarks/dispatch_split.py [--k 4] [--reps 11] [--size xs]

The last line printed is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
import dispatch as D

from paravt.models.base import SamplingParams
from paravt.models.hf import HFGenerator
from paravt.models.loading import load_policy
from paravt.models.tiny import build_tiny
from paravt.tools import ToolContext, build_toolset
from paravt.video import clear_cache, probe

MODES = ("parallel", "split", "half", "sequential")


def _bench(model: str, video: str, sub_tokens: int) -> D.Bench:
    torch.set_num_threads(1)
    ctx = ToolContext(episode_id="bench", video=video, info=probe(video), crop_max_frames=16, crop_fps=1.0,
                      crop_max_pixels=224 * 224, size_factor=32)
    return D.Bench(HFGenerator(load_policy(model), max_batch=16), build_toolset(["crop_video"]), ctx,
                   SamplingParams(temperature=0.0, max_new_tokens=sub_tokens))


async def _serve(bench: D.Bench, windows: list[tuple[float, float]], first: int) -> list[str]:
    summaries, _, _ = await bench._summaries([D._call(i, w) for i, w in enumerate(windows)], first)
    return summaries


def _worker(conn: Connection, model: str, video: str, sub_tokens: int) -> None:
    bench = _bench(model, video, sub_tokens)
    asyncio.run(_serve(bench, D._windows(2), 1))  # warm-up
    conn.send("ready")
    while (job := conn.recv()) is not None:
        windows, first = job
        clear_cache()
        conn.send(asyncio.run(_serve(bench, windows, first)))


async def _split(bench: D.Bench, conn: Connection, k: int) -> tuple[float, list[str]]:
    windows, h = D._windows(k), k // 2
    clear_cache()
    t0 = time.perf_counter()
    conn.send((windows[h:], h + 1))
    mine = await _serve(bench, windows[:h], 1)
    theirs = await asyncio.to_thread(conn.recv)
    return time.perf_counter() - t0, mine + theirs


async def _half(bench: D.Bench, k: int) -> tuple[float, list[str]]:
    clear_cache()
    t0 = time.perf_counter()
    out = await _serve(bench, D._windows(k)[: k // 2], 1)
    return time.perf_counter() - t0, out


def measure(bench: D.Bench, conn: Connection, k: int, reps: int) -> dict[str, Any]:
    runs = {
        "parallel": lambda: asyncio.run(bench.parallel(k)),
        "split": lambda: asyncio.run(_split(bench, conn, k)),
        "half": lambda: asyncio.run(_half(bench, k)),
        "sequential": lambda: asyncio.run(bench.sequential(k)),
    }
    times: dict[str, list[float]] = {m: [] for m in MODES}
    texts: dict[str, list[str]] = {}
    for r in range(reps + 1):  # the first round warms up
        for m in MODES if r % 2 else tuple(reversed(MODES)):
            got = runs[m]()
            texts[m] = list(got[-1])
            if r:
                times[m].append(got[0])
    med = {m: statistics.median(v) for m, v in times.items()}
    seq = med["sequential"]
    return {"k": k, "reps": reps, **{f"{m}_s": med[m] for m in MODES},
            "seq_over_parallel": seq / med["parallel"], "seq_over_split": seq / med["split"],
            "seq_over_half": seq / med["half"],
            "same_summaries": texts["parallel"] == texts["split"] == texts["sequential"]
            and texts["half"] == texts["parallel"][: k // 2]}


def render(row: dict[str, Any]) -> None:
    t = Table(title=f"K = {row['k']} crop_video calls: one process vs a 2-process split (median of {row['reps']})")
    for col in ("way", "ms", "sequential / way"):
        t.add_column(col, justify="right")
    for m in MODES:
        t.add_row(m, f"{row[f'{m}_s'] * 1e3:.1f}",
                  "-" if m == "sequential" else f"{row['sequential_s'] / row[f'{m}_s']:.2f}x")
    Console().print(t)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--reps", type=int, default=11)
    p.add_argument("--sub-tokens", type=int, default=48)
    p.add_argument("--size", default="xs", choices=["xs", "s", "m"])
    args = p.parse_args()
    if args.k < 2 or args.k % 2:
        p.error("--k must be even and ≥ 2 (the windows are split in halves)")
    with tempfile.TemporaryDirectory() as tmp:
        model = build_tiny("qwen3_vl", args.size, Path(tmp) / "model").path
        video = D._video(Path(tmp) / "v.mp4")
        ctx = mp.get_context("spawn")
        here, there = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(there, model, video, args.sub_tokens), daemon=True)
        proc.start()
        bench = _bench(model, video, args.sub_tokens)
        if here.recv() != "ready":
            raise SystemExit("the worker process did not start")
        try:
            row = measure(bench, here, args.k, args.reps)
        finally:
            here.send(None)
            proc.join(timeout=30)
    row.update(size=args.size, sub_tokens=args.sub_tokens)
    render(row)
    print(json.dumps({"benchmark": "dispatch_split", **row}))


if __name__ == "__main__":
    main()
