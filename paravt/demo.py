"""`paravt demo`: the whole pipeline on the CPU, end to end, every number measured in this run.

ParaVT-Synth → tiny Qwen3-VL-architecture model → SFT cold start → PARA-GRPO and vanilla GRPO
from the same SFT checkpoint → eval of base / SFT / RL × {parallel, sequential, none} on held-out
videos → report.html.

Two presets: the default (minutes on 2 cores) and ``quick`` (used by the test suite; tiny numbers,
the point is that every stage runs and writes what the report reads).

Re-running with the same ``--out`` continues: a stage whose output is complete is skipped (the
synthetic set, the base model, each trained model) and the evals resume by sample id. Delete the
folder to start over.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from paravt.config import TrainConfig

console = Console()


@dataclass(frozen=True)
class DemoPreset:
    train_videos: int
    eval_videos: int
    model_size: str
    sft_steps: int
    rl_steps: int
    group_size: int
    prompts_per_step: int
    eval_limit: int
    max_new_tokens: int  # a parallel turn of 8 JSON calls is ~250 tokens with the tiny tokenizer
    sub_max_new_tokens: int
    eval_nframes: int  # overview budget at eval: 8 frames miss the needle on ~70% of prompts


PRESETS = {
    "default": DemoPreset(train_videos=120, eval_videos=8, model_size="s", sft_steps=800, rl_steps=30, group_size=4,
                          prompts_per_step=2, eval_limit=24, max_new_tokens=384, sub_max_new_tokens=48,
                          eval_nframes=8),
    "quick": DemoPreset(train_videos=6, eval_videos=2, model_size="xs", sft_steps=8, rl_steps=2, group_size=2,
                        prompts_per_step=1, eval_limit=2, max_new_tokens=48, sub_max_new_tokens=16,
                        eval_nframes=8),
}


def demo_config(out: Path, p: DemoPreset) -> TrainConfig:
    """The tiny task's settings: 64×64 overview and crop frames, Qwen3-VL size factor 32."""
    cfg = TrainConfig()
    cfg.video.overview_max_pixels = 64 * 64
    cfg.video.crop_max_pixels = 64 * 64
    cfg.video.crop_max_frames = 16
    cfg.sampling.max_new_tokens = p.max_new_tokens
    cfg.sampling.sub_max_new_tokens = p.sub_max_new_tokens
    cfg.rollout.max_context_tokens = 4096
    cfg.sft.max_steps = p.sft_steps
    cfg.sft.epochs = 1000
    cfg.sft.lr = 1e-3
    cfg.sft.batch_size = 8 if p.model_size != "xs" else 2
    cfg.sft.save_every = 10_000
    cfg.rl.steps = p.rl_steps
    cfg.rl.group_size = p.group_size
    cfg.rl.prompts_per_step = p.prompts_per_step
    cfg.rl.oversample = 1.5
    cfg.rl.lr = 2e-5
    cfg.rl.save_every = 10_000
    cfg.data = str(out / "synth" / "rl.parquet")
    return cfg


def run_demo(out: Path, *, quick: bool = False) -> Path:
    """Run every stage; return the path of report.html."""
    from paravt.data.synth import build
    from paravt.eval.report import build_report
    from paravt.models.tiny import build_tiny
    from paravt.rl.loop import run_training

    p = PRESETS["quick" if quick else "default"]
    out.mkdir(parents=True, exist_ok=True)
    console.rule("[bold]1/5 ParaVT-Synth")
    if _todo(out / "synth"):
        build(out / "synth", videos=p.train_videos, eval_videos=p.eval_videos, seed=0)
        _done(out / "synth")
    console.rule("[bold]2/5 tiny Qwen3-VL model")
    if _todo(out / "base"):
        build_tiny("qwen3_vl", p.model_size, out / "base")
        _done(out / "base")
    cfg = demo_config(out, p)

    console.rule("[bold]3/5 SFT cold start")
    sft = cfg.model_copy(deep=True)
    sft.out_dir, sft.data, sft.model.path = str(out / "sft"), str(out / "synth" / "sft.parquet"), str(out / "base")
    if _todo(out / "sft"):
        run_training(sft, kind="sft", resume=True)  # continues from a checkpoint when one exists
        _done(out / "sft")

    console.rule("[bold]4/5 PARA-GRPO and vanilla GRPO from the SFT checkpoint")
    for name, para in (("paragrpo", True), ("vanilla_grpo", False)):
        rl = cfg.model_copy(deep=True)
        rl.out_dir, rl.model.path = str(out / name), str(out / "sft" / "model")
        rl.reward.anchor = para
        rl.rollout.think_prefix = para
        rl.rl.gating.enabled = para
        if _todo(out / name):
            run_training(rl, kind="rl", resume=True)
            _done(out / name)

    console.rule("[bold]5/5 eval on held-out videos + report")
    summary = _evaluate_all(out, cfg, p)
    report = build_report([out], out / "report.html")
    _print_summary(summary)
    console.print(f"[bold green]report:[/bold green] {report}", soft_wrap=True)
    return report


_DONE = ".demo-stage-done"  # written after a stage's last file, so a half-written stage is redone


def _todo(stage: Path) -> bool:
    """False (and say so) when a previous run already finished this stage."""
    if (stage / _DONE).exists():
        console.print(f"[dim]done already ({stage}); skipped[/dim]")
        return False
    return True


def _done(stage: Path) -> None:
    (stage / _DONE).write_text("ok\n")


def _evaluate_all(out: Path, cfg: TrainConfig, p: DemoPreset) -> dict[str, dict]:
    from paravt.agent import EpisodeSettings
    from paravt.eval.runner import evaluate, open_backend
    from paravt.data.episodes import load_episode_inputs

    samples = load_episode_inputs(out / "synth" / "eval.parquet", nframes=p.eval_nframes, limit=p.eval_limit)
    settings = EpisodeSettings.from_config(cfg, temperature=0.0)
    models = {"base": out / "base", "sft": out / "sft" / "model", "paragrpo": out / "paragrpo" / "model",
              "vanilla_grpo": out / "vanilla_grpo" / "model"}
    summary = {}
    for name, path in models.items():
        backend = open_backend(str(path), prefill_threads=cfg.model.prefill_threads)
        summary[name] = evaluate(samples, backend, settings, modes=["parallel", "sequential", "none"],
                                 out=out / f"eval_{name}", workers=4)
    return summary


def _print_summary(summary: dict[str, dict]) -> None:
    n = next((d["summary"]["n"] for m in summary.values() for d in m.get("by_mode", {}).values()), 0)
    t = Table(title=f"demo: {n} held-out ParaVT-Synth questions per row (measured in this run)")
    for col in ("model", "mode", "score", "MCQ", "mIoU", "F1", "format", "calls", "tokens in", "score nec.",
                "score unnec."):
        t.add_column(col, no_wrap=True)
    for name, m in summary.items():
        for mode, d in m.get("by_mode", {}).items():
            s = d["summary"]
            nec = d.get("by_tool_necessary", {})
            t.add_row(name, mode, *(_f(s.get(k)) for k in ("score", "mcq_acc", "tvg_miou", "oe_f1", "format_reward",
                                                            "mean_calls")),
                      _f(s.get("tokens", {}).get("total_input"), 0), _f(nec.get("necessary", {}).get("score")),
                      _f(nec.get("unnecessary", {}).get("score")))
    Console(width=max(console.width, 120)).print(t)
    console.print("score = mean accuracy reward (MCQ match, IoU, F1); nec./unnec. = prompts whose needle the "
                  "overview misses / shows (the Tool Necessity Gap); format = mean R_fmt (max 1.35).")


def _f(v: object, digits: int = 2) -> str:
    return "-" if v is None else (f"{v:.{digits}f}" if isinstance(v, float) else str(v))
