"""`paravt eval`: run episodes on an eval set, score them, write results and metrics.

Each (sample, mode) becomes one row of ``results.jsonl`` (appended and flushed as it finishes, so
an interrupted run resumes by skipping finished ids) and the run ends with ``metrics.json``. One
run writes an output directory at a time (its lock, `paravt.runlock`).
Episodes run ``workers`` at a time; with the hf backend their generation requests meet in shared
batches. Greedy decoding by default. The model is a local HF directory (hf backend) or the URL of
an OpenAI-compatible server (vLLM / SGLang; openai backend): a `paravt.agent.backend.Backend`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from paravt import runlock
from paravt.agent import EpisodeInput, EpisodeResult, EpisodeSettings, episode_reward, run_episode
from paravt.agent.backend import Backend
from paravt.errors import ModelError
from paravt.eval.metrics import compute_metrics
from paravt.eval.results import (
    CallRow,
    ResultRow,
    TranscriptTurn,
    append_result,
    finished_ids,
    load_results,
)
from paravt.jsonl import write_atomic
from paravt.models.openai.judge import judge_overrides
from paravt.rewards import RewardWeights
from paravt.rewards.terms import CORRECT_THRESHOLD

log = logging.getLogger(__name__)


def result_row(
    res: EpisodeResult, mode: str, weights: RewardWeights, acc_override: float | None = None
) -> ResultRow:
    inp = res.input
    b = episode_reward(res, weights, acc_override)
    calls = tuple(
        CallRow(c.name or "?", c.start, c.end, c.ok, c.error, c.summary) for c in res.calls
    )
    transcript = [TranscriptTurn("assistant", t.text) for t in res.main.turns]
    for sub in res.subs:
        transcript.extend(TranscriptTurn(f"sub[{sub.index}]", t.text) for t in sub.turns)
    return ResultRow(
        id=inp.id,
        mode=mode,
        task=inp.task,
        subset=inp.subset,
        nframes=inp.nframes,
        video=inp.video,
        duration=float(inp.duration or 0.0),
        question=inp.question,
        options=inp.options,
        answer=inp.answer,
        prediction=res.answer,
        score=float(b.acc),
        correct=b.acc >= CORRECT_THRESHOLD,  # MCQ match, IoU ≥ 0.5, F1 ≥ 0.5
        calls=calls,
        n_calls=len(calls),
        calls_written=b.n_calls,
        tokens=res.tokens,
        latency_s=res.latency_s,
        end_reason=res.end_reason,
        tool_necessary=inp.tool_necessary,
        transcript=tuple(transcript),
        format_reward=b.format_ref,  # the one yardstick (default R_fmt), whatever the eval weights
        error=res.error,
    )


#: Rows whose model requests failed, with no row answered before them in this run, that stop an
#: eval (at least ``workers``: the rows in flight together): the server fails every request.
FAIL_FAST_ROWS = 4


@dataclass
class _Breaker:
    """Stops a run whose first rows all failed at the model server (a rerun retries them)."""

    limit: int
    answered: int = 0
    failed: int = 0

    def record(self, res: EpisodeResult, out: Path) -> None:
        if not (res.backend_errors and res.end_reason == "error"):
            self.answered += 1
            return
        self.failed += 1
        if self.answered == 0 and self.failed >= self.limit:
            raise ModelError(
                f"eval stopped: the model server failed every request of the first {self.failed} "
                f"rows (the last: {res.error}); {out}/results.jsonl keeps them with their errors "
                "and a rerun retries them once the server answers"
            )


async def _run_mode(
    samples: Sequence[EpisodeInput],
    mode: str,
    backend: Backend,
    settings: EpisodeSettings,
    out: Path,
    workers: int,
    weights: RewardWeights,
    progress: Progress | None,
) -> dict[str, float]:
    """Run the mode's unfinished samples; return the judge counters of this call (empty without
    one)."""
    done = finished_ids(out / "results.jsonl", mode)
    todo = [s for s in samples if s.id not in done]
    sem = asyncio.Semaphore(workers)
    task = (
        progress.add_task(f"eval {mode}", total=len(samples), completed=len(samples) - len(todo))
        if progress
        else None
    )
    mode_settings = replace(settings, mode=mode)  # type: ignore[arg-type]
    judged: dict[str, float] = {}
    breaker = _Breaker(max(FAIL_FAST_ROWS, workers))

    async def one(s: EpisodeInput) -> None:
        async with sem:
            res = await run_episode(
                s,
                generator=backend.generator,
                codec=backend.codec,
                settings=mode_settings,
                tools=backend.tools,
                episode_id=f"{mode}-{s.id}",
            )
            (override,), counts = await judge_overrides(
                [res],
                url=backend.judge_url,
                model=backend.judge_model,
                timeout_s=backend.judge_timeout_s,
            )
        for k, v in counts.items():
            judged[k] = judged.get(k, 0.0) + v
        append_result(out / "results.jsonl", result_row(res, mode, weights, override))
        if progress is not None and task is not None:
            progress.update(task, advance=1)
        breaker.record(res, out)

    await asyncio.gather(*(one(s) for s in todo))
    return judged


def evaluate(
    samples: Sequence[EpisodeInput],
    backend: Backend,
    settings: EpisodeSettings,
    *,
    modes: Sequence[str],
    out: Path,
    workers: int = 4,
    weights: RewardWeights | None = None,
    progress: bool = True,
    data_errors: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run every mode on the same samples; write results.jsonl + metrics.json; return the metrics.
    ``data_errors``: the input's error rows (`paravt.data.screen.Screened.to_json`), listed in the
    metrics under that key, never run. One run per ``out`` at a time (`paravt.runlock`: a second
    one raises `OutputLocked` naming the first)."""
    with runlock.hold(out, "paravt eval"):
        return _evaluate(
            samples,
            backend,
            settings,
            modes=modes,
            out=out,
            workers=workers,
            weights=weights,
            progress=progress,
            data_errors=data_errors,
        )


def _evaluate(
    samples: Sequence[EpisodeInput],
    backend: Backend,
    settings: EpisodeSettings,
    *,
    modes: Sequence[str],
    out: Path,
    workers: int,
    weights: RewardWeights | None,
    progress: bool,
    data_errors: dict[str, Any] | None,
) -> dict[str, Any]:
    w = weights or RewardWeights.default()
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=not progress,
    )
    judge: dict[str, dict[str, float]] = {}
    with bar:
        for mode in modes:
            counts = asyncio.run(_run_mode(samples, mode, backend, settings, out, workers, w, bar))
            if counts:
                judge[mode] = counts
    rows = load_results(out / "results.jsonl")
    metrics = compute_metrics(rows)
    failed = failed_rows(rows)
    if failed:
        metrics["failed_rows"] = failed
    if data_errors and data_errors.get("error_rows"):
        metrics["data_errors"] = data_errors
    if judge:  # open-ended scores of these rows came from the LLM judge; fallbacks to F1 counted
        metrics["judge"] = judge
    counters = getattr(
        backend.generator, "counters", None
    )  # openai backend: were the answers trainable?
    if counters is not None:
        metrics["server"] = counters.as_dict()
    write_atomic(
        out / "metrics.json", json.dumps(metrics, indent=1, default=float), "the eval metrics"
    )
    if failed:
        _report_failed(failed, out)
    return metrics


def failed_rows(rows: Sequence[ResultRow], examples: int = 5) -> dict[str, Any] | None:
    """``{"n", "of", "examples": [{"id", "mode", "error"}…]}`` of the rows whose episode failed
    (``metrics.json`` under ``failed_rows``), or None when none did."""
    failed = [r for r in rows if r.failed]
    if not failed:
        return None
    return {
        "n": len(failed),
        "of": len(rows),
        "examples": [{"id": r.id, "mode": r.mode, "error": r.error} for r in failed[:examples]],
    }


def _report_failed(failed: dict[str, Any], out: Path) -> None:
    """One line on stderr for failed rows; `ModelError` (exit 2) when every row failed: such a run
    measured nothing and must not end like one that did."""
    first = failed["examples"][0]
    what = (
        f"{failed['n']} of {failed['of']} rows of {out}/results.jsonl failed (each row's error is "
        f"in its 'error' field; a rerun runs them again); the first, {first['id']} "
        f"({first['mode']}): {first['error']}"
    )
    if failed["n"] < failed["of"]:
        log.warning("%s", what)
        return
    raise ModelError(f"eval measured nothing: {what}")
