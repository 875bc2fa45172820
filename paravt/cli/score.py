"""`paravt score --in FILE.jsonl [--config C.yaml] [--summary]`: score completions offline.

Input line: ``{"completion": str, "task": "mcq"|"tvg"|"oe", "answer": str, "options": [str]?,
"prefix": str?, "successful_calls": int?, "question": str?}``. Output (stdout, one JSON line per
input line, same
order): ``{"reward", <every term of paravt.rewards.terms.TERMS: "acc", "format", "tool">, <R_fmt's
COMPONENTS: "format_base", "anchor">, "format_generated", "format_ref", "answer", "degenerate",
"closed": {"think", "tool_call", "answer"}, "tool_code", "n_calls"}``; a bad line
gives ``{"error": "..."}`` (and a message on stderr) and the rest continue. ``--summary`` prints
the aggregated metrics table on stderr (stdout stays JSON lines). Exit 0 unless the file or the
config cannot be read (then exit 2, the reason on stderr).

A completion is scored AS WRITTEN: a think prefix is added only when the line's ``"prefix"`` or
``--think-prefix`` gives one (a rollout whose forced ``<think>\\n`` was prompt), and never doubled:
a completion that already opens with ``<think>`` is kept as is (``tags.with_prefix``).

Open-ended rows are scored like training and eval score them: token F1, or, when the config sets
``reward.judge_url``, the LLM judge (one batched pass over all open-ended rows; ``question`` is
shown to the judge when given; the judged / F1-fallback counts go to the summary).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from paravt import config as cfgmod
from paravt.cli.output import stderr_console
from paravt.config import RewardConfig
from paravt.errors import DataError, ParavtError
from paravt.eval.completions import completion_line
from paravt.models.openai.judge import JudgeItem, judge_where_given
from paravt.protocol import tags as T
from paravt.protocol.answer import extract_answer
from paravt.rewards import RewardBreakdown, RewardWeights, compute_reward
from paravt.rewards.metrics import RolloutRecord, aggregate

_TASKS = ("mcq", "tvg", "oe")


def score(
    in_file: Path = typer.Option(..., "--in", help="JSONL file of completions to score."),
    config: Path | None = typer.Option(
        None, "--config", help="YAML config (its `reward` section is used)."
    ),
    summary: bool = typer.Option(False, "--summary", help="Print the aggregated metrics (stderr)."),
    think_prefix: bool = typer.Option(
        False,
        "--think-prefix",
        help="Prepend the forced '<think>\\n' to lines without a \"prefix\" (never doubled).",
    ),
    benchmark: str | None = typer.Option(
        None,
        "--benchmark",
        help="Score by this benchmark's lmms-eval rule instead: lines {completion, answer, "
        "options?} → {pred, score}.",
    ),
) -> None:
    """Score completions with the PARA-GRPO reward; one JSON line out per line in."""
    err = stderr_console()
    if benchmark is not None:  # ---- benchmark rules (paravt/eval/benchmarks/score_file.py) ----
        _score_benchmark(benchmark, in_file)
        return
    reward_cfg = cfgmod.load(config).reward if config else RewardConfig()
    lines = _read_lines(in_file)
    weights = RewardWeights.from_config(reward_cfg)
    default_prefix = T.THINK_PREFIX if think_prefix else ""
    rows: list[dict[str, Any] | str] = []  # a parsed row, or the error of its line
    for line in lines:
        if line.strip():
            try:
                rows.append(_row(line, default_prefix))
            except ValueError as exc:
                rows.append(str(exc))
    overrides, judge_counts = asyncio.run(
        judge_where_given(
            _judge_items(rows),
            url=reward_cfg.judge_url,
            model=reward_cfg.judge_model,
            timeout_s=reward_cfg.judge_timeout_s,
        )
    )
    records = _score_rows(rows, overrides, weights, err)
    if summary:
        err.print(_table({**aggregate(records), **judge_counts}))


def _score_rows(
    rows: list[dict[str, Any] | str],
    overrides: list[float | None],
    weights: RewardWeights,
    err: Console,
) -> list[RolloutRecord]:
    """Score each parsed row (``overrides``: the judge's R_acc where it scored one) and print its
    output line; a bad line prints its error line instead."""
    records: list[RolloutRecord] = []
    for n, (row, acc) in enumerate(zip(rows, overrides, strict=True), start=1):
        if isinstance(row, str):
            _line_error(err, n, row)
            continue
        try:
            b = compute_reward(
                row["text"],
                task=row["task"],
                answer=row["answer"],
                options=row.get("options"),
                prefix="",
                successful_calls=row.get("successful_calls"),
                weights=weights,
                acc_override=acc,
                generated=row["completion"],
            )
        except (ValueError, ParavtError) as exc:
            _line_error(err, n, str(exc))
            continue
        records.append(RolloutRecord(breakdown=b, task=row["task"]))
        typer.echo(json.dumps(output_line(b), ensure_ascii=False))
    return records


def _line_error(err: Console, n: int, message: str) -> None:
    """A bad line: its ``{"error"}`` result keeps stdout aligned with the input; the message
    also goes to stderr."""
    typer.echo(json.dumps({"error": message}))
    err.print(f"line {n}: {message}", markup=False, highlight=False)


def _judge_items(rows: list[dict[str, Any] | str]) -> list[JudgeItem | None]:
    """What the judge sees of each open-ended row (None for every other line)."""
    return [
        JudgeItem(str(r.get("question", "")), str(r["answer"]), extract_answer(r["text"]))
        if isinstance(r, dict) and r["task"] == "oe"
        else None
        for r in rows
    ]


def output_line(b: RewardBreakdown) -> dict[str, Any]:
    """The documented output format of one scored line: the reward, every term of ``TERMS`` by
    name, R_fmt (run weights and yardstick) and the flags."""
    scalars = {k: round(v, 6) for k, v in b.scalars().items() if k != "n_calls"}
    return {
        "reward": round(b.reward, 6),
        **scalars,
        "answer": b.answer,
        "degenerate": b.degenerate,
        "closed": {
            "think": b.closed_think,
            "tool_call": b.closed_tool_call,
            "answer": b.closed_answer,
        },
        "tool_code": b.tool_code,
        "n_calls": b.n_calls,
    }


def _row(line: str, default_prefix: str) -> dict[str, Any]:
    """A validated input line, with ``text``: the completion as the reward reads it."""
    try:
        row = completion_line(line)
    except DataError as exc:
        raise ValueError(str(exc)) from None
    if row.get("task") not in _TASKS:
        raise ValueError(f'"task" must be one of {list(_TASKS)}, got {row.get("task")!r}')
    if "answer" not in row:
        raise ValueError('"answer" is missing')
    for key in ("prefix", "question"):
        if not isinstance(row.get(key, ""), str):
            raise ValueError(f'"{key}" must be a string')
    calls = row.get("successful_calls")
    if calls is not None and (isinstance(calls, bool) or not isinstance(calls, int) or calls < 0):
        raise ValueError('"successful_calls" must be a non-negative integer')
    return {**row, "text": T.with_prefix(row.get("prefix", default_prefix), row["completion"])}


def _table(metrics: dict[str, float]) -> Table:
    table = Table(title="paravt score: aggregated metrics")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in metrics.items():
        table.add_row(key, f"{value:.4f}")
    return table


def _score_benchmark(benchmark: str, in_file: Path) -> None:
    """`paravt score --benchmark NAME`: lmms-eval's rule of that benchmark, one line out per line
    in."""
    from paravt.eval.benchmarks.score_file import score_lines

    for obj in score_lines(benchmark, _read_lines(in_file)):
        typer.echo(json.dumps(obj, ensure_ascii=False))


def _read_lines(path: Path) -> list[str]:
    """The lines of the input file; `DataError` naming it when it is not UTF-8 text."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8").splitlines()
    except UnicodeDecodeError as err:
        raise DataError(
            f"--in {path} is not UTF-8 text (byte {raw[err.start]:#04x} at offset {err.start}); "
            "save it as UTF-8 JSON lines"
        ) from None
