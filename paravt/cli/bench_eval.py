"""`paravt eval --benchmark NAME[,NAME…] --root DIR`: the papers' benchmarks, paper protocol.

Called by ``paravt eval`` when ``--benchmark`` is given (see `paravt.eval.benchmarks.protocol`);
prints one table row per (benchmark, mode) and writes ``OUT/<benchmark>/<prompt class>/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from paravt.cli.output import stdout_console
from paravt.config import TrainConfig
from paravt.eval.benchmarks.protocol import (
    BenchmarkPlan,
    Protocol,
    benchmark_root,
    run_benchmark,
)
from paravt.eval.benchmarks.registry import check_benchmark

console = stdout_console()


def parse_benchmarks(value: str) -> list[str]:
    """``"videomme,charades_sta"`` → names, each checked (`DataError` lists the known ones)."""
    return [check_benchmark(n.strip()) for n in value.split(",") if n.strip()]


def protocol_from(cfg: TrainConfig) -> Protocol:
    """The protocol of the config's ``eval`` section and overview budget (flags are already in it:
    ``paravt eval`` sets ``eval.prompt_class``, ``eval.scoring`` and, for ``--nframes``,
    ``video.overview_nframes``)."""
    ev = cfg.eval
    return Protocol(
        fps=ev.benchmark_fps,
        max_frames=cfg.video.overview_nframes,
        max_pixels=ev.benchmark_max_pixels,
        prompt_class=ev.prompt_class,
        scoring=ev.scoring,
        turns=ev.protocol,
    )


def run_benchmarks(
    names: list[str],
    root: Path,
    *,
    backend: Any,
    settings: Any,
    proto: Protocol,
    modes: list[str],
    out: Path,
    limit: int | None,
    workers: int,
    weights: Any,
) -> dict[str, Any]:
    """Every benchmark in turn; returns ``{name: metrics}`` and prints the table."""
    results = {}
    for name in names:
        results[name] = run_benchmark(
            name,
            benchmark_root(root, name, len(names)),
            backend=backend,
            base=settings,
            proto=proto,
            plan=BenchmarkPlan(tuple(modes), out, limit=limit, workers=workers),
            weights=weights,
        )
    console.print(benchmark_table(results, proto))
    return results


def benchmark_table(results: dict[str, dict[str, Any]], proto: Protocol) -> Table:
    t = Table(title=f"benchmarks ({proto.prompt_class}, scored {proto.scoring}; paper units)")
    for col in (
        "benchmark",
        "mode",
        "n",
        "score",
        "metric",
        "other scoring",
        "R@0.3/0.5/0.7",
        "tool use",
        "calls/q",
        "tokens in/q",
        "errors",
    ):
        t.add_column(col)
    other = "paravt" if proto.scoring == "lmms" else "lmms"
    for name, m in results.items():
        for mode, d in m["benchmark"]["by_mode"].items():
            head = d[proto.scoring]
            recall = (
                "/".join(_f(head.get(f"R@{k}")) for k in (0.3, 0.5, 0.7))
                if "R@0.3" in head
                else "-"
            )
            err = d.get("errors", {})
            t.add_row(
                name,
                mode,
                str(head["n"]),
                _f(d["headline"]),
                d["headline_metric"],
                _f(d[other]["headline"]),
                recall,
                _f(d.get("tool_use_rate")),
                _f(d.get("calls_per_question")),
                _f((d.get("tokens_per_question") or {}).get("total_input")),
                str(err.get("video", 0) + err.get("backend", 0)),
            )
    return t


def _f(v: object) -> str:
    if v is None:
        return "-"
    return f"{v:.2f}" if isinstance(v, float) else str(v)
