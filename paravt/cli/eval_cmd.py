"""`paravt eval`: episodes on an eval set, one or several dispatch modes, results + metrics."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, get_args

import typer
from rich.table import Table

from paravt.cli.checks import model_flags, model_source, output_dir
from paravt.cli.output import SET_HELP, fail, note, stdout_console
from paravt.config import DispatchMode, Flag, PromptClass, Scoring, load_for_model
from paravt.data.schema import check_dataset
from paravt.eval.benchmarks.registry import benchmark_names

if TYPE_CHECKING:
    from paravt.config import TrainConfig

console = stdout_console()


# The command's options, declared once here so that the command reads as its parameters.
_Model = Annotated[
    str,
    typer.Option("--model", help="HF checkpoint dir or http(s) URL of an OpenAI-compatible server"),
]
_Data = Annotated[
    Path | None, typer.Option("--data", help="eval parquet (e.g. runs/synth/eval.parquet)")
]
_Mode = Annotated[
    list[str] | None,
    typer.Option(
        "--mode", help=" | ".join(get_args(DispatchMode)) + " (repeatable; default eval.modes)"
    ),
]
_Compare = Annotated[
    bool, typer.Option("--compare", help="Run all three modes on the same samples")
]
_NFrames = Annotated[
    int | None,
    typer.Option(
        "--nframes",
        help="Overview frame budget: sets video.overview_nframes (with --benchmark: the cap of "
        "the frames at eval.benchmark_fps; with --data: exactly this many)",
    ),
]
_Out = Annotated[Path, typer.Option("--out")]
_Limit = Annotated[int | None, typer.Option("--limit", help="First N samples (default eval.limit)")]
_Workers = Annotated[
    int | None, typer.Option("--workers", help="Concurrent episodes (default eval.workers)")
]
_MaxNewTokens = Annotated[
    int | None,
    typer.Option("--max-new-tokens", help="Per main turn (default sampling.max_new_tokens)"),
]
_Processor = Annotated[
    str | None, typer.Option("--processor", help="Processor dir (with a URL model)")
]
_Config = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="YAML: model/video/rollout/reward/eval settings (default: the checkpoint's own "
        "paravt_config.yaml, else the defaults)",
    ),
]
_Benchmark = Annotated[
    str | None,
    typer.Option(
        "--benchmark",
        help="Benchmarks instead of --data: NAME[,NAME…] of " + ", ".join(benchmark_names()),
    ),
]
_Root = Annotated[
    Path | None,
    typer.Option(
        "--root",
        help="With --benchmark: directory of the benchmark's files (or of one subdirectory per "
        "benchmark)",
    ),
]
_PromptClass = Annotated[
    str | None,
    typer.Option(
        "--prompt-class",
        help="With --benchmark: "
        + " | ".join(get_args(PromptClass))
        + " (default eval.prompt_class)",
    ),
]
_Scoring = Annotated[
    str | None,
    typer.Option(
        "--scoring",
        help="With --benchmark: "
        + " | ".join(get_args(Scoring))
        + " headline scorer (default eval.scoring)",
    ),
]
_Set = Annotated[list[str] | None, typer.Option("--set", help=SET_HELP)]


def eval_cmd(
    model: _Model,
    data: _Data = None,
    mode: _Mode = None,
    compare: _Compare = False,
    nframes: _NFrames = None,
    out: _Out = Path("runs/eval"),
    limit: _Limit = None,
    workers: _Workers = None,
    max_new_tokens: _MaxNewTokens = None,
    processor: _Processor = None,
    config: _Config = None,
    benchmark: _Benchmark = None,
    root: _Root = None,
    prompt_class: _PromptClass = None,
    scoring: _Scoring = None,
    set_: _Set = None,
) -> None:
    """Evaluate; resumes by skipping finished ids in OUT/results.jsonl. Flags override the
    config."""
    if (benchmark is None) == (data is None) or (benchmark is not None and root is None):
        raise fail("paravt eval: pass either --data PARQUET or --benchmark NAME --root DIR")
    flags = [
        Flag(
            "--mode", "eval.modes", ["parallel", "sequential", "none"] if compare else mode or None
        ),
        Flag("--limit", "eval.limit", limit),
        Flag("--workers", "eval.workers", workers),
        Flag("--max-new-tokens", "sampling.max_new_tokens", max_new_tokens),
        Flag("--nframes", "video.overview_nframes", nframes),
        *model_flags(model),
        Flag("--prompt-class", "eval.prompt_class", prompt_class),
        Flag("--scoring", "eval.scoring", scoring),
    ]
    cfg, source = load_for_model(model, config, set_ or [], flags)
    note(f"settings: {source}")
    output_dir(out)
    model_source(model)
    if data is not None:
        check_dataset(data)
    _evaluate(cfg, data=data, benchmark=benchmark, root=root, out=out, processor=processor)


def _evaluate(
    cfg: TrainConfig,
    *,
    data: Path | None,
    benchmark: str | None,
    root: Path | None,
    out: Path,
    processor: str | None,
) -> None:
    """The eval itself, once the inputs are known to be good (torch is imported only now): the
    benchmarks of ``--benchmark`` or the rows of ``--data``."""
    from paravt.agent import EpisodeSettings
    from paravt.agent.backend import open_backend
    from paravt.agent.inputs import episode_inputs
    from paravt.cli import bench_eval
    from paravt.eval.runner import evaluate
    from paravt.rewards import RewardWeights
    from paravt.tracking import require_all

    require_all(cfg.logging.loggers)  # a listed tracker that is missing: before the model loads
    ev, modes, weights = cfg.eval, list(cfg.eval.modes), RewardWeights.from_config(cfg.reward)
    bench = bench_eval.parse_benchmarks(benchmark) if benchmark else []
    loaded = (
        None
        if data is None
        else episode_inputs(
            data,
            nframes=cfg.video.overview_nframes,
            limit=ev.limit,
            max_row_bytes=cfg.max_row_bytes,
        )
    )
    backend = open_backend(cfg.model, cfg.rollout, processor_dir=processor, judge=cfg.reward)
    settings = EpisodeSettings.from_config(cfg, temperature=ev.temperature)
    if bench:  # ---- `--benchmark`: the papers' benchmarks (paravt/cli/bench_eval.py) ----
        _benchmarks(cfg, bench, root, backend, settings, out)
        return
    assert loaded is not None  # --data (checked above)
    metrics = evaluate(
        loaded.inputs,
        backend,
        settings,
        modes=modes,
        out=out,
        workers=ev.workers,
        weights=weights,
        data_errors=loaded.screened.to_json(),
    )
    print_modes_table(metrics, modes)
    console.print(f"results: {out}/results.jsonl   metrics: {out}/metrics.json")
    _track(cfg, out, metrics)


def _track(cfg: TrainConfig, out: Path, metrics: dict[str, Any]) -> None:
    """The eval's metrics as a tracker run of its own when ``logging.loggers`` lists trackers
    (docs/tracking.md; named ``logging.run_name``, else the output directory's name)."""
    from paravt.tracking import TrackingSettings
    from paravt.tracking.results import log_result_run

    s = TrackingSettings.from_config(cfg.logging).tagged("eval")
    log_result_run(out, s, run_name=cfg.logging.run_name or out.resolve().name, metrics=metrics)


def _benchmarks(
    cfg: TrainConfig, bench: list[str], root: Path | None, backend: Any, settings: Any, out: Path
) -> None:
    """The papers' benchmarks under the paper protocol (``paravt.cli.bench_eval``)."""
    from paravt.cli import bench_eval
    from paravt.rewards import RewardWeights

    proto = bench_eval.protocol_from(cfg)
    bench_eval.run_benchmarks(
        bench,
        root,  # type: ignore[arg-type]
        backend=backend,
        settings=settings,
        proto=proto,
        modes=list(cfg.eval.modes),
        out=out,
        limit=cfg.eval.limit,
        workers=cfg.eval.workers,
        weights=RewardWeights.from_config(cfg.reward),
    )
    console.print(f"results and metrics under {out}/<benchmark>/{proto.prompt_class}/")


def print_modes_table(metrics: dict[str, Any], modes: Sequence[str], title: str = "eval") -> None:
    by_mode = metrics.get("by_mode", {})
    t = Table(title=title)
    for col in (
        "mode",
        "n",
        "failed",
        "score",
        "MCQ acc",
        "mIoU",
        "R@0.5",
        "F1",
        "calls",
        "tokens in",
        "latency s",
    ):
        t.add_column(col)
    for m in modes:
        d = by_mode.get(m, {}).get("summary", {})
        tok = d.get("tokens", {}).get("total_input")
        t.add_row(
            m,
            *(
                _fmt(d.get(k))
                for k in (
                    "n",
                    "n_failed",
                    "score",
                    "mcq_acc",
                    "tvg_miou",
                    "tvg_r@0.5",
                    "oe_f1",
                    "mean_calls",
                )
            ),
            _fmt(tok),
            _fmt(d.get("latency_s")),
        )
    console.print(t)


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if isinstance(v, float) else str(v)
