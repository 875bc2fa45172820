"""Shared prefill of a GRPO group: G rollouts of ONE prompt, with and without sharing (issue 14.1).

The prompt is the main agent's real opening (parallel-mode system prompt, the question and a
``--frames``-frame overview decoded from a synthetic H.264 video), asked G times with G seeds, as a
GRPO group does. Measured in ONE run, same model, same batch, alternating the variants per
repetition (median of ``--reps``):

* shared: one ``HFGenerator.run_batch`` of the G rows with ``share_prefill=True`` (the prompt,
  overview included, is prefilled once and its KV cache expanded to the G rows);
* independent: the same batch with ``share_prefill=False`` (G prefills in one batched forward);
* one by one: G single-row calls (G prefills, no batching), for reference;
* continuous: the G rows as ``generate`` calls to an engine with continuous batching
  (``HFGenerator(continuous=True)``): admitted together, they share one prefill the same way.

Each is timed twice: the prefill (``max_new_tokens = 1``: vision + prompt + the first token) —
``speedup`` = independent / shared of that, the goal of the issue (≥ 3×) — and a whole turn of
``--new-tokens`` tokens (``speedup_turn``), where the G-row decode that sharing cannot remove
dilutes the gain.

Part 2 (issue 14.2, KV cache kept across turns): the G rows' second main turn, built as the
episode builds it (prompt + sampled tokens + close + a tool response holding one ``--crop-frames``
crop at the crop resolution + the generation prompt), with the kept turn-1 caches vs a full
re-prefill: tokens prefilled per turn (before = full, after = kept) next to the tool-response
length, and the turn-2 time. Exactness of both parts is checked by tests/models/test_prefix_share.py
and tests/models/test_turn_cache.py, not here.

    .venv/bin/python benchmarks/rollout.py [--group 8] [--frames 16] [--size s] [--reps 3]

The last line printed is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
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
from paravt.data.synth.corpus import protocol_corpus
from paravt.models.base import ChatMessage, GenRequest, SamplingParams
from paravt.models.hf.generator import HFGenerator
from paravt.models.hf.loading import load_policy
from paravt.models.tiny import build_tiny
from paravt.protocol import prompts
from paravt.protocol.tags import THINK_PREFIX, render_result_line, with_media_marker
from paravt.video import Encoding, probe, sample_frames, write_video
from paravt.video.draw import solid

QUESTION = "What colour is the square that flashes in the middle of the video?"


def _requests(
    hf: HFGenerator,
    video: str,
    frames: int,
    max_pixels: int,
    size_factor: int,
    group: int,
    new_tokens: int,
) -> list[GenRequest]:
    info = probe(video)
    overview = sample_frames(
        video, 0.0, info.duration, nframes=frames, max_pixels=max_pixels, size_factor=size_factor
    )
    msgs = (
        ChatMessage("system", prompts.system_prompt("parallel")),
        ChatMessage(
            "user",
            prompts.user_prompt(QUESTION, None, duration=info.duration, nframes=len(overview)),
            videos=(overview,),
        ),
    )
    enc = hf.codec.encode_messages(msgs)
    base = GenRequest(
        prompt_ids=enc.ids + hf.codec.generation_prompt(THINK_PREFIX),
        messages=msgs,
        videos=enc.videos,
        response_prefix=THINK_PREFIX,
        sampling=SamplingParams(temperature=1.0, max_new_tokens=new_tokens),
    )
    return [replace(base, sampling=replace(base.sampling, seed=1000 + g)) for g in range(group)]


def _time(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(
    shared: HFGenerator, plain: HFGenerator, reqs: list[GenRequest], reps: int, cont: HFGenerator
) -> dict[str, float]:
    variants: dict[str, Callable[[], Any]] = {
        "shared": lambda: shared.run_batch(reqs),
        "independent": lambda: plain.run_batch(reqs),
        "one_by_one": lambda: [plain.run_batch([r]) for r in reqs],
        "continuous": lambda: asyncio.run(cont.generate(reqs)),
    }
    for fn in variants.values():  # warm-up (allocator, processor caches)
        fn()
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(reps):
        for name, fn in variants.items():
            times[name].append(_time(fn))
    return {k: statistics.median(v) for k, v in times.items()}


def _turn2(hf: HFGenerator, req: GenRequest, out: Any, crop: Any) -> GenRequest:
    tool = ChatMessage(
        "tool",
        render_result_line(1, 4.0, 8.0, with_media_marker("frames of the window")),
        videos=(crop,),
    )
    enc = hf.codec.encode_message(tool)
    ids = (
        req.prompt_ids
        + out.token_ids
        + hf.codec.close_turn(out.token_ids)
        + enc.ids
        + hf.codec.generation_prompt(THINK_PREFIX)
    )
    return replace(
        req,
        prompt_ids=ids,
        messages=req.messages + (tool,),
        videos=req.videos + enc.videos,
        sampling=replace(req.sampling, seed=(req.sampling.seed or 0) + 1),
    )


def measure_turns(
    policy: Any, video: str, reqs: list[GenRequest], crop_frames: int, reps: int
) -> dict[str, Any]:
    """Turn 2 of the G rows with the kept turn-1 caches vs a full re-prefill (fresh generators
    per repetition, so that every repetition starts from turn 1)."""
    crop = sample_frames(
        video,
        4.0,
        8.0,
        nframes=crop_frames,
        max_pixels=VideoConfig().crop_max_pixels,
        size_factor=VideoConfig().size_factor,
    )
    times: dict[str, list[float]] = {"kept": [], "full": []}
    tokens: dict[str, list[float]] = {}
    tool_len = 0
    for _ in range(reps + 1):  # the first repetition warms up
        for name, entries in (("kept", 4 * len(reqs)), ("full", 0)):
            hf = HFGenerator(policy, max_batch=len(reqs), turn_cache_entries=entries)
            first = hf.run_batch([replace(r, keep_kv=True) for r in reqs])
            nxt = [_turn2(hf, replace(r, keep_kv=True), o, crop) for r, o in zip(reqs, first)]
            tool_len = len(hf.codec.encode_message(nxt[0].messages[-1]).ids)
            t0 = time.perf_counter()
            second = hf.run_batch(nxt)
            times[name].append(time.perf_counter() - t0)
            tokens[name] = [
                statistics.mean(o.metrics["prefill_tokens"] for o in first),
                statistics.mean(o.metrics["prefill_tokens"] for o in second),
            ]
    return {
        "tool_response_tokens": tool_len,
        "turn2_s": {k: statistics.median(v[1:]) for k, v in times.items()},
        "prefill_tokens_per_row": tokens,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--group", type=int, default=8, help="G rollouts of the one prompt")
    p.add_argument("--frames", type=int, default=16, help="overview frames")
    p.add_argument("--size", default="s", choices=["xs", "s", "m"])
    p.add_argument("--max-pixels", type=int, default=VideoConfig().overview_max_pixels)
    p.add_argument(
        "--new-tokens", type=int, default=32, help="tokens of the whole-turn measurement"
    )
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--crop-frames", type=int, default=8, help="frames of the turn-2 crop (part 2)")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (1: what the tests use; 2 stall each other on a busy 2-core "
        "box)",
    )
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        video = str(Path(tmp) / "clip.mp4")
        write_video(
            video,
            [solid(128, 96, (10 * i % 250, 80, 200 - 6 * i % 190)) for i in range(32)],
            fps=2.0,
            encoding=Encoding(gop=8),
        )
        policy = load_policy(
            build_tiny("qwen3_vl", args.size, Path(tmp) / "model", corpus=protocol_corpus()).path
        )
        shared, plain = (
            HFGenerator(policy, max_batch=args.group),
            HFGenerator(policy, max_batch=args.group, share_prefill=False),
        )
        size_factor = VideoConfig().size_factor
        prefill_reqs = _requests(
            shared, video, args.frames, args.max_pixels, size_factor, args.group, 1
        )
        turn_reqs = [
            replace(r, sampling=replace(r.sampling, max_new_tokens=args.new_tokens))
            for r in prefill_reqs
        ]
        cont = HFGenerator(policy, continuous=True)
        prefill = measure(shared, plain, prefill_reqs, args.reps, cont)
        turn = measure(shared, plain, turn_reqs, args.reps, cont)
        turns = measure_turns(policy, video, turn_reqs, args.crop_frames, args.reps)
    table = Table(
        title=f"G = {args.group} rollouts of one prompt ({len(prefill_reqs[0].prompt_ids)} "
        "prompt tokens, "
        f"{args.frames}-frame overview, qwen3_vl {args.size}, {args.threads} thread(s); median "
        f"of {args.reps})"
    )
    for col in (
        "variant",
        "prefill s",
        f"turn s ({args.new_tokens} tokens)",
        "prefill ratio",
        "turn ratio",
    ):
        table.add_column(col, justify="right")
    for name in ("shared", "independent", "one_by_one", "continuous"):
        table.add_row(
            name,
            f"{prefill[name]:.3f}",
            f"{turn[name]:.3f}",
            f"{prefill[name] / prefill['shared']:.2f}×",
            f"{turn[name] / turn['shared']:.2f}×",
        )
    Console().print(table)
    t2 = Table(
        title=f"Turn 2 of the same G rows: a tool response of {turns['tool_response_tokens']} "
        "tokens "
        f"({args.crop_frames}-frame crop); tokens prefilled per row"
    )
    for col in ("KV cache", "turn 1 tokens", "turn 2 tokens", "turn 2 / tool response", "turn 2 s"):
        t2.add_column(col, justify="right")
    for name, label in (("full", "re-prefill (before)"), ("kept", "kept (after)")):
        t1_tok, t2_tok = turns["prefill_tokens_per_row"][name]
        t2.add_row(
            label,
            f"{t1_tok:.0f}",
            f"{t2_tok:.0f}",
            f"{t2_tok / turns['tool_response_tokens']:.2f}",
            f"{turns['turn2_s'][name]:.3f}",
        )
    Console().print(t2)
    print(
        json.dumps(
            {
                "benchmark": "rollout",
                "group": args.group,
                "frames": args.frames,
                "size": args.size,
                "prompt_tokens": len(prefill_reqs[0].prompt_ids),
                "new_tokens": args.new_tokens,
                "threads": args.threads,
                "prefill_s": prefill,
                "turn_s": turn,
                "speedup": prefill["independent"] / prefill["shared"],
                "speedup_turn": turn["independent"] / turn["shared"],
                "speedup_vs_one_by_one": prefill["one_by_one"] / prefill["shared"],
                "speedup_continuous": prefill["independent"] / prefill["continuous"],
                "turns": turns,
                "turn2_prefill_over_tool_response": turns["prefill_tokens_per_row"]["kept"][1]
                / turns["tool_response_tokens"],
                "speedup_turn2": turns["turn2_s"]["full"] / turns["turn2_s"]["kept"],
            }
        )
    )


if __name__ == "__main__":
    main()
