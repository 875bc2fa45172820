"""Every phase of the research loop as a fraction of this machine's own limit, on the real workload.

The limit: the achievable fp32 rate of the matmuls the tiny ``s`` model runs (its q/k/v/o, MLP and
lm_head shapes, ``torch.nn.functional.linear``) at a training-size token count, with the torch
threads in use: FLOPs of one layer's matmuls + the lm_head, divided by their measured time.

The workload: a checkpoint that CALLS TOOLS, built once (about a minute) and cached under
``--out``: ParaVT-Synth (a few videos), the tiny Qwen3-VL ``s`` (protocol tokenizer), a short SFT
on the oracle's parallel traces, as ``paravt repro``'s demo does (without the prior). Then:

- SFT step: ``SFTTrainer.step`` (8 rows, forward + backward + AdamW), the default pass;
- RL step: ``GRPOTrainer.run_step`` with the demo preset's settings (G = 4, 3 prompts rolled out,
  max 384 / 48 new tokens): its rollout (all episodes, sub-agents, second turns) and its update;
- eval episode: greedy episodes on eval prompts, run concurrently as ``paravt eval`` does.

FLOPs, counted honestly (``_Flops``): 2 · (text matmul params, lm_head included, embedding lookup
not) per token processed + causal attention 2 · T² · (heads · head_dim) per layer and sequence +
2 · vision params per vision patch; a training pass is 3 × its forward (forward + backward), the
update adds a reference forward (1×) and the old-logprob forward when the code runs it is NOT
counted (it is avoidable work). Rollout FLOPs count what generation must do: every prompt token
the engine prefilled (``prefill_tokens``, shared prefills once) and every generated token, each
against its context. ``rows_per_forward``: the RL steps' generated tokens / the engine's forwards
that sampled them (``HFGenerator.decode_stats``: how many sequences decode together on average;
with replicas, this process's engine only). ``rollout_vs_bound``: the rollout's wall time / the time
of forwarding the
same trajectories (main and sub-agents, media included) in full right-padded batches, no grad
(``paravt.rl.batch``): what one step's generation would cost if decoding were free of its
sequential steps.

``tokens_ratio``: text tokens (vision placeholders excluded: the same under any tokenizer) of the
SAME rollouts' and SFT rows' text under the protocol tokenizer / the legacy ≈ 530-token one.
``sft_step_speedup`` / ``update_speedup``: batched vs per-sequence passes on the same batch
(``benchmarks/batch_bench.py``, from the batched-passes work; null when that module is absent).
``base_build_s_per_1k_rows``: the base's row build on the cached synth
(``benchmarks/row_build.py``). ``syncs``: device→host syncs per SFT step, per GRPO update and per
decode step, counted by the op (``benchmarks/syncs.py``, ``paravt.models.syncs``).

    .venv/bin/python benchmarks/limits.py [--quick] [--out runs/limits] [--replicas 1]

Prints a table; the last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

console = Console(stderr=True)
VISION = ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>")


# ---------------------------------------------------------------------------------- the limit
# the FLOP model and the measured matmul rate are the trainer's own (``perf/mfu/actor``)
from paravt.rl.mfu import (  # noqa: E402
    Flops as _Flops,  # noqa: E402
    Shapes,
    matmul_limit,
)


def _flops_of(model: Any) -> _Flops:
    """Text FLOPs with the vision tower's 2 × params per patch."""
    shapes = Shapes.of(model)
    assert shapes is not None, "the tiny model's config has its text shapes"
    vision = sum(p.numel() for n, p in model.named_parameters() if ".visual." in f".{n}")
    return _Flops.of_shapes(shapes, vision)


# ---------------------------------------------------------------------------------- the workload
def ensure_checkpoint(out: Path, sft_steps: int) -> Path:
    """Synth data + tiny s + short SFT, cached (``out/.done``)."""
    from paravt.data.synth.build import build
    from paravt.data.synth.corpus import protocol_corpus
    from paravt.models.tiny import build_tiny
    from paravt.rl.loop import run_training

    if (out / ".done").exists():
        return out
    t0 = time.perf_counter()
    build(out / "synth", videos=24, eval_videos=4, seed=0, workers=2)
    build_tiny("qwen3_vl", "s", out / "base", corpus=protocol_corpus())
    cfg = workload_config(out)
    cfg.data, cfg.out_dir, cfg.model.path = (
        str(out / "synth" / "sft.parquet"),
        str(out / "sft"),
        str(out / "base"),
    )
    cfg.sft.max_steps, cfg.sft.epochs, cfg.sft.save_every = sft_steps, 1000, 10_000
    run_training(cfg, kind="sft", progress=False)
    (out / ".done").write_text(f"{time.perf_counter() - t0:.1f}\n")
    return out


def workload_config(out: Path) -> Any:
    from paravt.repro.presets import PRESETS, base_config

    cfg = base_config(out, PRESETS["demo"])
    cfg.data = str(out / "synth" / "rl.parquet")
    cfg.model.path = str(out / "sft" / "model")
    return cfg


class Recorder:
    """Wraps ``generator.generate``: every request's prompt length, prefilled and generated
    tokens."""

    def __init__(self, gen: Any) -> None:
        self.gen, self.rows = gen, []
        inner = gen.generate

        async def generate(requests: Any) -> Any:
            outs = await inner(requests)
            for r, o in zip(requests, outs, strict=True):
                self.rows.append(
                    (
                        len(r.prompt_ids),
                        int(o.metrics.get("prefill_tokens", len(r.prompt_ids))),
                        len(o.token_ids),
                    )
                )
            return outs

        gen.generate = generate

    def take(self) -> list[tuple[int, int, int]]:
        rows, self.rows = self.rows, []
        return rows

    def decoded(self) -> tuple[int, int] | None:
        """(token-producing forwards, live rows they advanced) of this process's engine so far."""
        engine = getattr(
            self.gen, "local", self.gen
        )  # a ReplicaGenerator: its in-process engine only
        stats = getattr(engine, "decode_stats", None)
        return None if stats is None else (stats().forwards, stats().rows)

    def batches(self) -> dict[str, float] | None:
        queue = getattr(self.gen, "_queue", None)
        stats = getattr(queue, "stats", None)
        return stats().to_json() if stats is not None else None


def rollout_flops(fl: _Flops, rows: list[tuple[int, int, int]]) -> float:
    """Prefilled tokens against their context + each generated token against its context."""
    total = 0.0
    for prompt, prefilled, gen in rows:
        total += fl.per_token * (prefilled + gen)
        total += fl.attn_per_t2 * (
            prompt * prompt - (prompt - prefilled) ** 2
        )  # new rows × keys (≈ causal)
        total += fl.attn_per_t2 * 2 * gen * (prompt + gen / 2)
    return total


def text_tokens(trajs: list[Any], new_tok: Any, old_tok: Any) -> tuple[int, int, int]:
    """(protocol, legacy, vision) token counts of the trajectories' text."""
    vis = set(new_tok.convert_tokens_to_ids(list(VISION)))
    n_new = n_old = n_vis = 0
    for t in trajs:
        run: list[int] = []
        for i in (*t.ids, -1):
            if i in vis or i == -1:
                if run:
                    text = new_tok.decode(run, skip_special_tokens=False)
                    n_new += len(new_tok(text, add_special_tokens=False)["input_ids"])
                    n_old += len(old_tok(text, add_special_tokens=False)["input_ids"])
                    run = []
                n_vis += i != -1
            else:
                run.append(i)
    return n_new, n_old, n_vis


def patches_of(traj: Any, pad_ids: set[int]) -> int:
    return 4 * sum(i in pad_ids for i in traj.ids)  # spatial merge 2 × 2


@torch.no_grad()
def bound_time(model: Any, processor: Any, trajs: list[Any], budget: int) -> float | None:
    """Seconds to forward ``trajs`` in full right-padded batches (paravt.rl.batch), no grad."""
    try:
        from paravt.rl.batch import micro_batches
    except ImportError:
        return None
    mbs = micro_batches(processor, trajs, budget)
    model(**mbs[0].inputs, use_cache=False)  # warm-up
    t0 = time.perf_counter()
    for mb in mbs:
        model(**mb.inputs, use_cache=False)
    return time.perf_counter() - t0


# ---------------------------------------------------------------------------------- phases
@dataclass
class Report:
    limit: float = 0.0
    rows: list[tuple[str, str, str, str]] = field(
        default_factory=list
    )  # phase, time, FLOP/s, fraction
    out: dict[str, Any] = field(default_factory=dict)

    def phase(self, name: str, seconds: float, flops: float, what: str) -> float:
        frac = flops / seconds / self.limit if seconds > 0 else 0.0
        self.rows.append(
            (name, f"{seconds:.2f} s {what}", f"{flops / seconds / 1e9:.2f}", f"{frac:.3f}")
        )
        return frac


def sft_phase(rep: Report, cfg: Any, fl: _Flops, steps: int) -> tuple[list[Any], Any]:
    from paravt.rl.session import PolicySession
    from paravt.rl.sft import SFTTrainer

    cfg = cfg.model_copy(deep=True)
    cfg.data = str(Path(cfg.data).with_name("sft.parquet"))
    session = PolicySession.create(cfg.model, cfg.sft.model_copy(update={"lr": 1e-5}))
    trainer = SFTTrainer.build(cfg, session)
    trainer.step(0)  # warm-up (feature cache)
    times, flops = [], []
    pad = {session.codec.tokenizer.convert_tokens_to_ids("<|video_pad|>")}
    for s in range(1, steps + 1):
        batch = trainer.batch(s)
        t0 = time.perf_counter()
        trainer.step(s)
        times.append(time.perf_counter() - t0)
        flops.append(
            3 * fl.forward([len(t.ids) for t in batch], sum(patches_of(t, pad) for t in batch))
        )
    rep.out["sft_step_s"] = statistics.median(times)
    rep.out["fraction_of_limit"]["sft"] = rep.phase(
        "SFT step (8 rows)", statistics.median(times), statistics.median(flops), "/step"
    )
    return trainer.examples, session


def rl_phase(rep: Report, trainer: Any, rec: Recorder, fl: _Flops, steps: int) -> list[Any]:
    """``steps`` GRPO steps; the trajectories of the last one."""
    pad = {trainer.s.codec.tokenizer.convert_tokens_to_ids("<|video_pad|>")}
    m: dict[str, list[float]] = {}
    trajs: list[Any] = []
    before = rec.decoded()
    for s in range(steps):
        step = trainer.run_step(s)
        rows = rec.take()
        trajs = [t for r in step.results for t in r.trajectories]
        for k, v in (
            ("rollout_s", step.metrics["timing_s/gen"]),
            ("update_s", step.metrics["timing_s/ref"] + step.metrics["timing_s/update_actor"]),
            ("rollout_flops", rollout_flops(fl, rows)),
            ("calls", step.metrics.get("kappa", 0.0)),
            ("prefill", sum(p for _, p, _ in rows)),
            ("decode", sum(g for _, _, g in rows)),
            (
                "update_flops",
                4 * fl.forward([len(t.ids) for t in trajs], sum(patches_of(t, pad) for t in trajs)),
            ),
        ):
            m.setdefault(k, []).append(v)
    med = {k: statistics.median(v) for k, v in m.items()}
    frac = rep.out["fraction_of_limit"]
    frac["rollout"] = rep.phase(
        f"RL rollout ({len(step.results)} episodes)",
        med["rollout_s"],
        med["rollout_flops"],
        "/step",
    )
    frac["update"] = rep.phase(
        "RL update (+ reference)", med["update_s"], med["update_flops"], "/step"
    )
    rep.out |= {
        "rollout_s": med["rollout_s"],
        "update_s": med["update_s"],
        "tool_calls_per_rollout": med["calls"],
        "decode_tokens_per_s": med["decode"] / med["rollout_s"],
        "prefill_tokens_per_s": med["prefill"] / med["rollout_s"],
        "batcher": rec.batches(),
    }
    after = rec.decoded()
    rep.out["rows_per_forward"] = (
        (after[1] - before[1]) / max(1, after[0] - before[0])
        if before is not None and after is not None
        else None
    )
    bound = bound_time(trainer.s.model, trainer.s.processor, trajs, 8192)
    rep.out["rollout_bound_s"] = bound
    rep.out["rollout_vs_bound"] = m["rollout_s"][-1] / bound if bound else None
    return trajs


def eval_phase(rep: Report, cfg: Any, fl: _Flops, session: Any, rec: Recorder, n: int) -> None:
    from dataclasses import replace

    from paravt.agent import EpisodeSettings, run_group
    from paravt.agent.inputs import load_episode_inputs

    inputs = load_episode_inputs(Path(cfg.data).with_name("eval.parquet"), limit=n)
    settings = EpisodeSettings.from_config(cfg)
    settings = replace(
        settings,
        sampling=replace(settings.sampling, temperature=0.0),
        sub_sampling=replace(settings.sub_sampling, temperature=0.0),
    )
    rec.take()
    t0 = time.perf_counter()
    asyncio.run(
        run_group(
            inputs,
            generator=session.generator,
            codec=session.codec,
            settings=settings,
            tools=session.tools,
        )
    )
    wall = time.perf_counter() - t0
    rep.out["eval_episode_s"] = wall / len(inputs)
    rep.out["fraction_of_limit"]["eval"] = rep.phase(
        f"eval ({len(inputs)} episodes, greedy)", wall, rollout_flops(fl, rec.take()), "total"
    )


def passes(rep: Report, session: Any, sft_rows: list[Any], trajs: list[Any], repeats: int) -> None:
    """Batched vs per-sequence SFT step and GRPO update on the same batches (null when absent)."""
    try:
        from batch_bench import compare_passes, items_from_rows
    except ImportError:
        rep.out |= {"sft_step_speedup": None, "update_speedup": None}
        return
    cmp = compare_passes(
        session.model,
        session.processor,
        sft_rows,
        items_from_rows(trajs),
        ref_model=session.ref_model,
        repeats=repeats,
    )
    rep.out |= cmp.to_json()


def tokens(rep: Report, sft_rows: list[Any], trajs: list[Any], new_tok: Any) -> None:
    from paravt.models.tokenizer import train_tokenizer

    old = train_tokenizer("legacy")
    for name, rows in (("sft_row", sft_rows), ("rollout_traj", trajs)):
        n_new, n_old, n_vis = text_tokens(rows, new_tok, old)
        rep.out[f"tokens_per_{name}"] = {
            "protocol": n_new / len(rows),
            "legacy": n_old / len(rows),
            "vision": n_vis / len(rows),
        }
        rep.out[f"tokens_ratio_{name}"] = n_new / n_old
    rep.out["tokens_ratio"] = rep.out["tokens_ratio_rollout_traj"]


def sync_phase(rep: Report, session: Any, generator: Any, rows: list[Any]) -> None:
    """Device→host syncs per SFT step, per GRPO update (8 rows each) and per decode step
    (``benchmarks/syncs.py``: counted by the op, what a GPU would pay)."""
    import syncs  # beside this script

    engine = getattr(generator, "local", generator)  # a ReplicaGenerator: its in-process engine
    res = syncs.measure_passes(session.model, session.processor, rows)
    res["decode_step"] = syncs.measure_decode(engine.policy, syncs.prompts_of(session.codec, rows))
    rep.out["syncs"] = res
    rep.out["syncs_per_sft_step"] = res["sft_step"]["total"]
    rep.out["syncs_per_update"] = res["grpo_update"]["total"]
    rep.out["syncs_per_decode_step"] = res["decode_step"]["per_decode_step"]


def row_build_phase(rep: Report, out: Path) -> None:
    """The base's row build on the cached synth (``benchmarks/row_build.py``: every frame decoded,
    every message encoded): seconds per 1,000 rows."""
    import row_build  # beside this script

    res = row_build.measure(out / "synth", out / "base")
    rep.out["base_build_s_per_1k_rows"] = res["base_build_s_per_1k_rows"]
    rep.out["base_build_video_share"] = round(res["video_s"] / res["build_s"], 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help="fewer repeats, 1 RL step, 4 eval episodes"
    )
    ap.add_argument(
        "--out", default="runs/limits", help="where the tool-calling checkpoint is cached"
    )
    ap.add_argument("--sft-steps", type=int, default=150, help="SFT steps of the cached checkpoint")
    ap.add_argument("--replicas", type=int, default=1, help="model.replicas of the RL rollouts")
    ap.add_argument(
        "--continuous",
        choices=("on", "off"),
        default=None,
        help="model.continuous_batching of the rollouts and eval (default: the config's)",
    )
    args = ap.parse_args()
    quick = args.quick
    out = ensure_checkpoint(Path(args.out), args.sft_steps)
    cfg = workload_config(out)
    rep = Report(out={"threads": torch.get_num_threads(), "fraction_of_limit": {}, "quick": quick})

    from paravt.rl.grpo import GRPOTrainer
    from paravt.rl.session import PolicySession

    cfg.model.replicas = args.replicas
    if args.continuous is not None:
        cfg.model.continuous_batching = args.continuous == "on"
    cfg.rollout.tools = ["crop_video"]
    session = PolicySession.create(cfg.model, cfg.rl, rollout=cfg.rollout, reference=cfg.model.path)
    fl = _flops_of(session.model)
    t = session.model.config.text_config
    shapes = Shapes.of(session.model)
    assert shapes is not None
    rep.limit, rates = matmul_limit(shapes, 4096, 5 if quick else 20)
    decode_limit, _ = matmul_limit(shapes, 16, 20 if quick else 100)
    rep.out |= {
        "limit_flops": rep.limit,
        "limit_matmul_rates": rates,
        "decode_shape_flops": decode_limit,
        "params": sum(p.numel() for p in session.model.parameters()),
        "vocab": t.vocab_size,
    }
    rec = Recorder(session.generator)
    trainer = GRPOTrainer.build(cfg, session)
    trajs = rl_phase(rep, trainer, rec, fl, 1 if quick else 3)
    eval_phase(rep, cfg, fl, session, rec, 4 if quick else 12)
    asyncio.run(session.generator.aclose())
    sft_rows, sft_session = sft_phase(rep, cfg, fl, 2 if quick else 5)
    tokens(rep, sft_rows[:64], trajs, session.codec.tokenizer)
    passes(rep, sft_session, sft_rows[:8], trajs, 2 if quick else 5)
    sync_phase(rep, sft_session, session.generator, sft_rows[:8])
    row_build_phase(rep, out)
    render(rep)


def render(rep: Report) -> None:
    table = Table(
        title=f"limit: {rep.limit / 1e9:.2f} GFLOP/s (fp32 linears of the s model, "
        f"{rep.out['threads']} threads)"
    )
    for col in ("phase", "time", "GFLOP/s", "fraction of limit"):
        table.add_column(col)
    for row in rep.rows:
        table.add_row(*row)
    console.print(table)
    keys = (
        "sft_step_speedup",
        "update_speedup",
        "tokens_ratio",
        "tokens_ratio_sft_row",
        "rollout_vs_bound",
        "decode_tokens_per_s",
        "prefill_tokens_per_s",
        "tool_calls_per_rollout",
        "rows_per_forward",
        "base_build_s_per_1k_rows",
        "syncs_per_sft_step",
        "syncs_per_update",
        "syncs_per_decode_step",
    )
    for k in keys:
        v = rep.out.get(k)
        console.print(f"{k}: {v:.3f}" if isinstance(v, float) else f"{k}: {v}")
    print(json.dumps(rep.out, default=float))


if __name__ == "__main__":
    main()
