"""Parallel vs sequential dispatch of K tool calls, with the hf backend and a tiny Qwen3-VL.

Part 1 — wall time of the tool-using part of a turn (crop the K windows, then let a sub-agent
summarise each), for K = 1, 2, 4, 8:

* parallel: the K crops run concurrently (``ToolSet.run_calls``) and the K sub-agents go out as
  ONE batched request (``paravt.agent.subagents.run_subagents``) — what ``Episode`` does;
* sequential: the same K calls one after another: crop one window, one sub-agent request, next.
  This is sequential DISPATCH of the sub-agents, not the sequential mode of docs/ARCHITECTURE.md §2
  (one crop per main turn, its frames re-injected into the main context, no sub-agents; part 2
  below): the timing isolates what batching the K sub-agents buys. The paper gives no timing to
  compare with
  (it claims tool latency "bounded by the slowest sub-agent").

Same prompts, same frames, greedy decoding: both modes produce the same summaries (checked). The
decoded-frames cache is cleared before every measurement; the median of ``--reps`` repetitions is
reported, and the ratio sequential / parallel (> 1: parallel is faster). Timed three times in one
run, each engine serving both modes: one process with the torch threads of ``--threads``
throughout; one process with ``--prefill-threads`` for the prefills (vision tower, prompt) only
(`HFGenerator.prefill_threads`); ``--replicas`` processes (`paravt.models.hf.replicas`: the K
sub-agent requests of a parallel turn are split across them; a sequential request goes to an idle
one). The K/2 row of the replicas is the ideal split of the K row. The time is split into
the crops (tool decode), the sub-agents' ``generate`` call (prompt inputs, vision tower, prefill,
decode steps) and the rest (sub-agent prompts built by the chat codec, event-loop hops).
The CPU time of the process (``time.process_time``, all its threads) is reported next to the
wall time: on a machine shared with other jobs it is the steadier measure (with one torch thread
it is close to the wall time on an idle machine; the parallel crops' threads add up in it).

Part 2 — input tokens per rollout (docs/ARCHITECTURE.md §7). Whole episodes run with a scripted main
agent (parallel: one turn with K crop calls, then an answer; sequential mode of
docs/ARCHITECTURE.md §2: one call per turn with the crop's frames re-injected into the main
context, K + 1 turns) and the real sub-agents.
The measured main-agent input tokens (summed over its requests, as the eval counts them) are
printed next to ``T_par(K) = v + s + K·h`` and ``T_seq(K) = K·(v + s) + K(K+1)/2·h`` with v, s, h
fitted per mode by ``paravt.eval.tokens`` (v = overview visual tokens).

``--device cuda --dtype bfloat16`` times the same turn with the policy on an accelerator (one
process: the thread and replica engines are CPU engines). What is not covered: real-model summary
lengths (a random model decodes until the limit), models larger than the tiny sizes.

    .venv/bin/python benchmarks/dispatch.py [--reps 3] [--sub-tokens 48] [--size xs] [--replicas 2]
    # on a GPU:
    python benchmarks/dispatch.py --device cuda --dtype bfloat16 --size m --reps 5

The last line printed is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

from paravt.agent import EpisodeInput, EpisodeSettings, run_episode
from paravt.agent.subagents import SubagentCall, run_subagents
from paravt.data.synth.corpus import protocol_corpus
from paravt.eval.results import ResultRow
from paravt.eval.tokens import fit_token_budget, t_par, t_seq
from paravt.models.base import GenOutput, GenRequest, SamplingParams
from paravt.models.hf.generator import HFGenerator
from paravt.models.hf.loading import load_policy
from paravt.models.hf.replicas import ReplicaGenerator
from paravt.models.tiny import build_tiny
from paravt.protocol import prompts
from paravt.protocol.parser import ParsedCall
from paravt.protocol.tags import render_answer, render_crop_call, render_tool_turn
from paravt.tools import ToolContext, build_toolset
from paravt.video import Encoding, clear_cache, probe, write_video
from paravt.video.draw import solid

KS = (1, 2, 4, 8)
QUESTION = "What colour is the brief flash?"
WINDOW_S, STRIDE_S = 8.0, 10.0  # every call crops 8 s, so the work per call is the same for all K


def _windows(k: int) -> list[tuple[float, float]]:
    return [(STRIDE_S * i, STRIDE_S * i + WINDOW_S) for i in range(k)]


def _video(path: Path) -> str:
    frames = [
        solid(128, 128, (20 + (7 * i) % 200, 90, 200 - (5 * i) % 180)) for i in range(96)
    ]  # 96 s, 1 fps
    write_video(path, frames, fps=1.0, encoding=Encoding(gop=10))
    return str(path)


def _call(i: int, w: tuple[float, float]) -> ParsedCall:
    return ParsedCall(
        index=i,
        name="crop_video",
        arguments={"start_time": w[0], "end_time": w[1]},
        raw="",
        source="json",
        closed=True,
    )


# ---- part 1: timing -----------------------------------------------------------------------------


@dataclass
class Bench:
    gen: HFGenerator
    tools: Any
    ctx: ToolContext
    sampling: SamplingParams

    async def _summaries(
        self, calls: Sequence[ParsedCall], first: int
    ) -> tuple[list[str], float, float]:
        """Summaries, seconds in the tools, seconds in the (batched) sub-agent generate call."""
        t0 = time.perf_counter()
        obs = await self.tools.run_calls(self.ctx, calls)
        t_tools = time.perf_counter() - t0
        jobs = [SubagentCall(first + n, o.frames, o.window) for n, o in enumerate(obs)]
        res = await run_subagents(
            jobs,
            question=QUESTION,
            generator=self.gen,
            codec=self.gen.codec,
            sampling=self.sampling,
            timeout_s=600.0,
            episode_id="bench",
            first_index=first,
        )
        t_gen = res[0].trajectory.turns[0].latency_s if res[0].trajectory is not None else 0.0
        return [r.summary for r in res], t_tools, t_gen

    async def parallel(self, k: int) -> tuple[float, tuple[float, float, float], list[str]]:
        clear_cache()
        t0, c0 = time.perf_counter(), time.process_time()
        summaries, t_tools, t_gen = await self._summaries(
            [_call(i, w) for i, w in enumerate(_windows(k))], 1
        )
        return time.perf_counter() - t0, (t_tools, t_gen, time.process_time() - c0), summaries

    async def sequential(self, k: int) -> tuple[float, tuple[float, float, float], list[str]]:
        clear_cache()
        t0, c0 = time.perf_counter(), time.process_time()
        out: list[str] = []
        t_tools = t_gen = 0.0
        for i, w in enumerate(_windows(k)):
            s, t, g = await self._summaries([_call(0, w)], i + 1)
            out += s
            t_tools, t_gen = t_tools + t, t_gen + g
        return time.perf_counter() - t0, (t_tools, t_gen, time.process_time() - c0), out


def time_dispatch(bench: Bench, reps: int, engine: str) -> list[dict[str, Any]]:
    asyncio.run(bench.parallel(2))  # warm-up: first-call allocations, oneDNN kernels
    rows = []
    threads = bench.gen.prefill_threads
    for k in KS:
        par, seq = [], []
        same = True
        for r in range(reps):
            order = ("parallel", "sequential") if r % 2 == 0 else ("sequential", "parallel")
            got = {m: asyncio.run(getattr(bench, m)(k)) for m in order}
            par.append(got["parallel"][:2])
            seq.append(got["sequential"][:2])
            same &= got["parallel"][2] == got["sequential"][2]
        p = statistics.median(t for t, _ in par)
        s = statistics.median(t for t, _ in seq)
        rows.append(
            {
                "engine": engine,
                "prefill_threads": threads,
                "k": k,
                "parallel_s": p,
                "sequential_s": s,
                "ratio": s / p,
                "parallel_tools_s": statistics.median(t[0] for _, t in par),
                "sequential_tools_s": statistics.median(t[0] for _, t in seq),
                "parallel_gen_s": statistics.median(t[1] for _, t in par),
                "sequential_gen_s": statistics.median(t[1] for _, t in seq),
                "same_summaries": same,
            }
        )
        pc, sc = statistics.median(t[2] for _, t in par), statistics.median(t[2] for _, t in seq)
        rows[-1].update(parallel_cpu_s=pc, sequential_cpu_s=sc, cpu_ratio=sc / pc)
    return rows


# ---- part 2: tokens -----------------------------------------------------------------------------


class ScriptedMain:
    """Main-agent requests get scripted texts; sub-agent requests go to the real HF generator."""

    def __init__(self, hf: HFGenerator, texts: Sequence[str]) -> None:
        self.hf, self.texts = hf, list(texts)
        self.sub_system = prompts.subagent_system_prompt()

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        subs = [r for r in requests if r.messages[0].content == self.sub_system]
        sub_out = iter(await self.hf.generate(subs)) if subs else iter(())
        outs = []
        for r in requests:
            if r.messages[0].content == self.sub_system:
                outs.append(next(sub_out))
                continue
            text = self.texts.pop(0)
            ids = self.hf.codec.encode_text(text) + (self.hf.codec.im_end_id,)
            outs.append(GenOutput(ids, tuple(0.0 for _ in ids), text, "stop"))
        return outs

    async def aclose(self) -> None:
        return None


def _script(mode: str, k: int) -> list[str]:
    answer = render_answer("The flash is in the summaries.", "red", with_open_think=False)
    calls = [render_crop_call(*w) for w in _windows(k)]
    if mode == "parallel":
        return [
            render_tool_turn("I will look at several windows.", calls, with_open_think=False),
            answer,
        ]
    return [
        render_tool_turn("I will look at one window.", [c], with_open_think=False) for c in calls
    ] + [answer]


def measure_tokens(
    hf: HFGenerator, video: str, sub_sampling: SamplingParams, overview: int
) -> list[ResultRow]:
    rows = []
    tools = build_toolset(["crop_video"])
    inp = EpisodeInput("bench", video, QUESTION, "oe", "red", None, overview)
    for mode in ("parallel", "sequential"):
        for k in KS:
            settings = EpisodeSettings(
                mode=mode,
                max_turns=k + 1,
                k_max=8,
                sub_sampling=sub_sampling,
                sampling=SamplingParams(temperature=0.0, max_new_tokens=256),
            )
            res = asyncio.run(
                run_episode(
                    inp,
                    generator=ScriptedMain(hf, _script(mode, k)),
                    codec=hf.codec,
                    settings=settings,
                    episode_id=f"{mode}-{k}",
                    tools=tools,
                )
            )
            assert res.n_successful_calls == k and res.answer == "red", (mode, k, res.calls)
            rows.append(
                ResultRow(
                    id=f"{mode}-{k}",
                    mode=mode,
                    task="oe",
                    subset="bench",
                    nframes=overview,
                    video=video,
                    duration=probe(video).duration,
                    question=QUESTION,
                    options=None,
                    answer="red",
                    prediction=res.answer,
                    score=1.0,
                    correct=True,
                    n_calls=k,
                    tokens=res.tokens,
                )
            )
    return rows


def token_table(rows: list[ResultRow]) -> list[dict[str, Any]]:
    fits = {
        m: fit_token_budget([r for r in rows if r.mode == m]) for m in ("parallel", "sequential")
    }
    by = {(r.mode, r.n_calls): r for r in rows}
    out = []
    for k in KS:
        fp, fs = fits["parallel"], fits["sequential"]
        out.append(
            {
                "k": k,
                "par_main": by["parallel", k].tokens.main_input,
                "par_model": t_par(k, fp.v, fp.s, fp.h),
                "par_sub": by["parallel", k].tokens.sub_visual + by["parallel", k].tokens.sub_text,
                "seq_main": by["sequential", k].tokens.main_input,
                "seq_model": t_seq(k, fs.v, fs.s, fs.h),
            }
        )
    for row in out:
        row["seq_over_par_main"] = row["seq_main"] / row["par_main"]
    return out + [
        {"fit": {m: {"v": f.v, "s": f.s, "h": f.h, "rmse": f.rmse} for m, f in fits.items()}}
    ]


# ---- output -------------------------------------------------------------------------------------


def render(
    timing: list[dict[str, Any]], tokens: list[dict[str, Any]], meta: dict[str, Any]
) -> None:
    c = Console()
    t = Table(
        title=f"Tool part of one turn, K crop_video calls ({meta['window_s']:g} s windows, "
        f"{meta['sub_tokens']} sub-agent tokens, tiny qwen3_vl-{meta['size']}, hf backend, "
        f"{meta['device']} {meta['dtype']})"
    )
    for col in (
        "engine",
        "K",
        "parallel s",
        "sequential s",
        "seq / par",
        "crops par s",
        "crops seq s",
        "generate par s",
        "generate seq s",
        "cpu par s",
        "cpu seq s",
        "cpu seq / par",
        "same summaries",
    ):
        t.add_column(col, justify="right")
    for r in timing:
        t.add_row(
            r["engine"],
            str(r["k"]),
            f"{r['parallel_s']:.3f}",
            f"{r['sequential_s']:.3f}",
            f"{r['ratio']:.2f}x",
            f"{r['parallel_tools_s']:.3f}",
            f"{r['sequential_tools_s']:.3f}",
            f"{r['parallel_gen_s']:.3f}",
            f"{r['sequential_gen_s']:.3f}",
            f"{r['parallel_cpu_s']:.3f}",
            f"{r['sequential_cpu_s']:.3f}",
            f"{r['cpu_ratio']:.2f}x",
            "yes" if r["same_summaries"] else "NO",
        )
    c.print(t)
    fit = tokens[-1]["fit"]
    u = Table(
        title="Main-agent input tokens per rollout: measured vs docs/ARCHITECTURE.md §7 "
        f"(par fit v={fit['parallel']['v']:.0f} s={fit['parallel']['s']:.0f} "
        f"h={fit['parallel']['h']:.1f}; "
        f"seq fit v={fit['sequential']['v']:.0f} s={fit['sequential']['s']:.0f} "
        f"h={fit['sequential']['h']:.1f})"
    )
    for col in (
        "K",
        "parallel measured",
        "T_par(K)",
        "sub-agents (par)",
        "sequential measured",
        "T_seq(K)",
        "seq / par (main)",
    ):
        u.add_column(col, justify="right")
    for r in tokens[:-1]:
        u.add_row(
            str(r["k"]),
            str(r["par_main"]),
            f"{r['par_model']:.0f}",
            str(r["par_sub"]),
            str(r["seq_main"]),
            f"{r['seq_model']:.0f}",
            f"{r['seq_over_par_main']:.2f}x",
        )
    c.print(u)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--sub-tokens", type=int, default=48)
    p.add_argument("--size", default="xs", choices=["xs", "s", "m"])
    p.add_argument(
        "--overview", type=int, default=16, help="overview frames of the main agent (token part)"
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (1: tiny models are overhead-bound; 2 stalls on a busy box)",
    )
    p.add_argument(
        "--replicas",
        type=int,
        default=2,
        help="also time a ReplicaGenerator with this many processes (paravt.models.hf.replicas; "
        "1: skip)",
    )
    p.add_argument(
        "--device",
        default="cpu",
        help="torch device of the policy (cuda: one process; the "
        "prefill-threads and replicas engines are CPU engines and are skipped)",
    )
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument(
        "--prefill-threads",
        type=int,
        default=2,
        help="torch threads of the prefill only (HFGenerator.prefill_threads); the timing runs "
        "without it (before) and with it (after), in this one run",
    )
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        hf = HFGenerator(
            load_policy(
                build_tiny("qwen3_vl", args.size, work / "model", corpus=protocol_corpus()).path,
                device=args.device,
                dtype=args.dtype,
            ),
            max_batch=16,
        )
        on_cpu = args.device == "cpu"
        video = _video(work / "v.mp4")
        sampling = SamplingParams(temperature=0.0, max_new_tokens=args.sub_tokens)
        ctx = ToolContext(
            episode_id="bench",
            video=video,
            info=probe(video),
            crop_max_frames=16,
            crop_fps=1.0,
            crop_max_pixels=224 * 224,
            size_factor=32,
        )
        timing = time_dispatch(
            Bench(hf, build_toolset(["crop_video"]), ctx, sampling),
            args.reps,
            "1 process" if on_cpu else f"1 process, {args.device} {args.dtype}",
        )
        if on_cpu:
            both = HFGenerator(hf.policy, max_batch=16, prefill_threads=args.prefill_threads)
            timing += time_dispatch(
                Bench(both, build_toolset(["crop_video"]), ctx, sampling),
                args.reps,
                f"1 process, prefill_threads={args.prefill_threads}",
            )
        if args.replicas > 1 and on_cpu:
            rep = ReplicaGenerator(hf.policy, args.replicas, max_batch=16)
            if not rep.wait_started():
                raise SystemExit(f"replicas did not start: {[r.down for r in rep.remotes]}")
            timing += time_dispatch(
                Bench(rep, build_toolset(["crop_video"]), ctx, sampling),
                args.reps,
                f"{args.replicas} replicas",
            )
            rep.close()
        tokens = token_table(measure_tokens(hf, video, sampling, args.overview))
    meta = {
        "device": args.device,
        "dtype": args.dtype,
        "size": args.size,
        "sub_tokens": args.sub_tokens,
        "window_s": WINDOW_S,
        "reps": args.reps,
        "threads": args.threads,
        "prefill_threads": args.prefill_threads,
        "replicas": args.replicas,
        "overview": args.overview,
    }
    render(timing, tokens, meta)
    print(json.dumps({"benchmark": "dispatch", **meta, "timing": timing, "tokens": tokens}))


if __name__ == "__main__":
    main()
