"""One RL step's rollout with continuous batching off and on, same weights, same seeds (issue 33).

The workload is benchmarks/limits.py's (its cached tool-calling checkpoint under ``--out``, built
there once if missing): the demo preset's RL step, ``ceil(oversample × prompts_per_step)`` prompts
× G rollouts launched together through ``run_group`` with the step's seed (sub-agents, second
turns and all), as ``GRPOTrainer.run_step`` rolls them out. Two engines over ONE loaded policy:
the window batcher (``model.continuous_batching`` off) and the continuous scheduler (on),
alternated ``--reps`` times (median). For each: the rollout's wall time, ``rows_per_forward``
(``HFGenerator.decode_stats``: generated tokens / the forwards that sampled them) and
``rollout_vs_bound`` (wall time / forwarding the same trajectories in full right-padded batches,
limits.py's ``bound_time``); and how many trajectories came out token-identical in the two
modes (they sample with per-row seeds, so they should all be, up to float near-ties).

``--execute-tool-code``: run ``<tool_code>`` blocks as calls (``rollout.call_forms=release``), so
that a checkpoint that writes its calls that way (the demo's pretrained base before SFT) still
spawns sub-agents and second turns; ``--out`` may then hold that base as ``sft/model`` beside a
``synth/`` dataset.

    .venv/bin/python benchmarks/continuous.py [--out runs/limits] [--reps 3] [--step 0]

Prints a table; the last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from limits import bound_time, ensure_checkpoint, workload_config  # noqa: E402
from paravt.agent import EpisodeSettings, run_group  # noqa: E402
from paravt.agent.inputs import load_episode_inputs  # noqa: E402
from paravt.models.chat import ChatCodec  # noqa: E402
from paravt.models.hf.generator import HFGenerator  # noqa: E402
from paravt.models.hf.loading import load_policy  # noqa: E402
from paravt.rl.gating import overview_budget  # noqa: E402
from paravt.tools import build_toolset  # noqa: E402


def step_inputs(cfg: Any) -> list[Any]:
    """The prompts of one demo RL step, G copies each, with their overview budgets."""
    n_prompts = math.ceil(cfg.rl.oversample * cfg.rl.prompts_per_step)
    prompts = load_episode_inputs(cfg.data, limit=n_prompts)
    return [
        p.with_nframes(overview_budget(cfg, 0, p.id))
        for p in prompts
        for _ in range(cfg.rl.group_size)
    ]


def rollout(
    gen: HFGenerator,
    codec: ChatCodec,
    tools: Any,
    inputs: list[Any],
    settings: EpisodeSettings,
    step: int,
) -> tuple[float, float, float, list[Any]]:
    """(wall seconds, process CPU seconds, rows per forward, results) of one step's rollout on
    ``gen``. The CPU seconds (all threads) are what to compare on a machine shared with other work:
    they do not count the time spent waiting for a core."""
    before = gen.decode_stats()
    ids = [f"s{step}-e{i}" for i in range(len(inputs))]
    t0, c0 = time.perf_counter(), time.process_time()
    results = asyncio.run(
        run_group(
            inputs, generator=gen, codec=codec, settings=settings, tools=tools, episode_ids=ids
        )
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    after = gen.decode_stats()
    return wall, cpu, (after.rows - before.rows) / max(1, after.forwards - before.forwards), results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="runs/limits", help="limits.py's cached checkpoint")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--step", type=int, default=0, help="the RL step whose seed the rollouts use")
    ap.add_argument(
        "--execute-tool-code", action="store_true", help="<tool_code> blocks are calls too"
    )
    args = ap.parse_args()
    cfg = workload_config(ensure_checkpoint(Path(args.out), 150))
    cfg.rollout.call_forms = "release" if args.execute_tool_code else "per_call"
    policy = load_policy(cfg.model.path)
    policy.model.eval()
    codec, tools = ChatCodec(policy.processor), build_toolset(["crop_video"])
    engines = {"off": HFGenerator(policy), "on": HFGenerator(policy, continuous=True)}
    settings = EpisodeSettings.from_config(cfg, training=True)  # an RL step's rollouts
    seed = 1_000 + args.step
    settings = replace(
        settings,
        sampling=replace(settings.sampling, seed=seed),
        sub_sampling=replace(settings.sub_sampling, seed=seed),
    )
    inputs = step_inputs(cfg)
    rollout(
        engines["off"], codec, tools, inputs[:2], settings, args.step
    )  # warm-up (caches, allocator)
    runs: dict[str, list[tuple[float, float, float]]] = {k: [] for k in engines}
    trajs: dict[str, list[Any]] = {}
    for _ in range(args.reps):
        for name, gen in engines.items():
            wall, cpu, rpf, results = rollout(gen, codec, tools, inputs, settings, args.step)
            runs[name].append((wall, cpu, rpf))
            trajs[name] = [t for r in results for t in r.trajectories]
    bound = bound_time(policy.model, policy.processor, trajs["on"], 8192)
    same = sum(a.ids == b.ids for a, b in zip(trajs["off"], trajs["on"], strict=False))
    out: dict[str, Any] = {
        "benchmark": "continuous",
        "episodes": len(inputs),
        "threads": torch.get_num_threads(),
        "execute_tool_code": args.execute_tool_code,
        "bound_s": bound,
        "identical_trajectories": same,
        "trajectories": [len(trajs["off"]), len(trajs["on"])],
    }
    for name, rs in runs.items():
        wall = statistics.median(w for w, _, _ in rs)
        out[name] = {
            "rollout_s": wall,
            "cpu_s": statistics.median(c for _, c, _ in rs),
            "rows_per_forward": statistics.median(r for _, _, r in rs),
            "rollout_vs_bound": wall / bound if bound else None,
        }
    out["speedup"] = out["off"]["rollout_s"] / out["on"]["rollout_s"]
    out["cpu_ratio"] = out["on"]["cpu_s"] / out["off"]["cpu_s"]
    table = Table(
        title=f"one demo RL step's rollout ({len(inputs)} episodes), median of {args.reps}"
    )
    for col in ("continuous batching", "rollout s", "CPU s", "rows per forward", "rollout / bound"):
        table.add_column(col, justify="right")
    for name in engines:
        r = out[name]
        table.add_row(
            name,
            f"{r['rollout_s']:.2f}",
            f"{r['cpu_s']:.2f}",
            f"{r['rows_per_forward']:.2f}",
            f"{r['rollout_vs_bound']:.2f}" if r["rollout_vs_bound"] else "-",
        )
    Console(stderr=True).print(table)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
