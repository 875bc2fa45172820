"""Shared prefill of a GRPO group: G rollouts of ONE prompt, with and without sharing (issue 14.1).

The prompt is the main agent's real opening (parallel-mode system prompt, the question and a
``--frames``-frame overview decoded from a synthetic H.264 video), asked G times with G seeds, as a
GRPO group does. Measured in ONE run, same model, same batch, alternating the variants per
repetition (median of ``--reps``):

* shared: one ``HFGenerator.run_batch`` of the G rows with ``share_prefill=True`` (the prompt,
  overview included, is prefilled once and its KV cache expanded to the G rows);
* independent: the same batch with ``share_prefill=False`` (G prefills in one batched forward);
* one by one: G single-row calls (G prefills, no batching), for reference.

Each is timed twice: the prefill (``max_new_tokens = 1``: vision + prompt + the first token) —
``speedup`` = independent / shared of that, the goal of the issue (≥ 3×) — and a whole turn of
``--new-tokens`` tokens (``speedup_turn``), where the G-row decode that sharing cannot remove
dilutes the gain. Exactness is checked by tests/models/test_prefix_share.py, not here.

    .venv/bin/python benchmarks/rollout.py [--group 8] [--frames 16] [--size s] [--reps 3]

The last line printed is JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

from paravt.config import VideoConfig
from paravt.models.base import ChatMessage, GenRequest, SamplingParams
from paravt.models.hf import HFGenerator
from paravt.models.loading import load_policy
from paravt.models.tiny import build_tiny
from paravt.protocol import prompts
from paravt.protocol.tags import THINK_PREFIX
from paravt.video import probe, sample_frames, write_video
from paravt.video.draw import solid

QUESTION = "What colour is the square that flashes in the middle of the video?"


def _requests(hf: HFGenerator, video: str, frames: int, max_pixels: int, size_factor: int, group: int,
              new_tokens: int) -> list[GenRequest]:
    info = probe(video)
    overview = sample_frames(video, 0.0, info.duration, nframes=frames, max_pixels=max_pixels, size_factor=size_factor)
    msgs = (ChatMessage("system", prompts.system_prompt("parallel")),
            ChatMessage("user", prompts.user_prompt(QUESTION, None, duration=info.duration, nframes=len(overview)),
                        videos=(overview,)))
    enc = hf.codec.encode_messages(msgs)
    base = GenRequest(prompt_ids=enc.ids + hf.codec.generation_prompt(THINK_PREFIX), messages=msgs,
                      videos=enc.videos, response_prefix=THINK_PREFIX,
                      sampling=SamplingParams(temperature=1.0, max_new_tokens=new_tokens))
    return [replace(base, sampling=replace(base.sampling, seed=1000 + g)) for g in range(group)]


def _time(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(shared: HFGenerator, plain: HFGenerator, reqs: list[GenRequest], reps: int) -> dict[str, float]:
    variants: dict[str, Callable[[], Any]] = {
        "shared": lambda: shared.run_batch(reqs),
        "independent": lambda: plain.run_batch(reqs),
        "one_by_one": lambda: [plain.run_batch([r]) for r in reqs],
    }
    for fn in variants.values():  # warm-up (allocator, processor caches)
        fn()
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(reps):
        for name, fn in variants.items():
            times[name].append(_time(fn))
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--group", type=int, default=8, help="G rollouts of the one prompt")
    p.add_argument("--frames", type=int, default=16, help="overview frames")
    p.add_argument("--size", default="s", choices=["xs", "s", "m"])
    p.add_argument("--max-pixels", type=int, default=VideoConfig().overview_max_pixels)
    p.add_argument("--new-tokens", type=int, default=32, help="tokens of the whole-turn measurement")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads (1: what the tests use; 2 stall each other on a busy 2-core box)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        video = str(Path(tmp) / "clip.mp4")
        write_video(video, [solid(128, 96, (10 * i % 250, 80, 200 - 6 * i % 190)) for i in range(32)], fps=2.0, gop=8)
        policy = load_policy(build_tiny("qwen3_vl", args.size, Path(tmp) / "model").path)
        shared, plain = HFGenerator(policy, max_batch=args.group), HFGenerator(policy, max_batch=args.group, share_prefill=False)
        size_factor = VideoConfig().size_factor
        prefill_reqs = _requests(shared, video, args.frames, args.max_pixels, size_factor, args.group, 1)
        turn_reqs = [replace(r, sampling=replace(r.sampling, max_new_tokens=args.new_tokens)) for r in prefill_reqs]
        prefill = measure(shared, plain, prefill_reqs, args.reps)
        turn = measure(shared, plain, turn_reqs, args.reps)
    table = Table(title=f"G = {args.group} rollouts of one prompt ({len(prefill_reqs[0].prompt_ids)} prompt tokens, "
                        f"{args.frames}-frame overview, qwen3_vl {args.size}, {args.threads} thread(s); median of {args.reps})")
    for col in ("variant", "prefill s", f"turn s ({args.new_tokens} tokens)", "prefill ratio", "turn ratio"):
        table.add_column(col, justify="right")
    for name in ("shared", "independent", "one_by_one"):
        table.add_row(name, f"{prefill[name]:.3f}", f"{turn[name]:.3f}", f"{prefill[name] / prefill['shared']:.2f}×",
                      f"{turn[name] / turn['shared']:.2f}×")
    Console().print(table)
    print(json.dumps({
        "benchmark": "rollout", "group": args.group, "frames": args.frames, "size": args.size,
        "prompt_tokens": len(prefill_reqs[0].prompt_ids), "new_tokens": args.new_tokens, "threads": args.threads,
        "prefill_s": prefill, "turn_s": turn,
        "speedup": prefill["independent"] / prefill["shared"],
        "speedup_turn": turn["independent"] / turn["shared"],
        "speedup_vs_one_by_one": prefill["one_by_one"] / prefill["shared"],
    }))


if __name__ == "__main__":
    main()
