"""`paravt data distill`: run a pipeline over a QA parquet, write ``sft.parquet`` + ``report.json``.

Flow per input row: open the video (probe, overview frames) → the pipeline on the PRIMARY teacher
→ if it refuses or a request fails (`TeacherGaveUp`), the same row from scratch on the FALLBACK
teacher (``fallback_used``) → an `Outcome` (rows, or a reject reason).

Resumable: every finished row is appended to ``out/progress.jsonl`` (id, status, reason, counters,
the produced rows as records) as soon as it ends, through `paravt.jsonl` (a line torn by a killed
run is ended first, so the next row is kept; the torn row runs again); one run writes ``out`` at
a time (`paravt.runlock`); a new run skips ids whose status is
``accepted`` or ``rejected``; rows that ended in an ERROR (both teachers' requests failed, or an
unexpected exception, logged with its traceback) are tried again. ``sft.parquet`` and
``report.json`` are rebuilt from the whole progress file at the end
of every run, so they always describe everything done so far. At most ``workers`` rows run
concurrently; a rich progress bar goes to stderr. The output is valid input as it is: its video
paths resolve under ``out`` through symlinks to the input's data root (`link_videos`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paravt import runlock
from paravt.config import DistillConfig
from paravt.data.rows import Row
from paravt.data.schema import row_from_record, row_to_record, write_rows
from paravt.distill.bank import ExperienceBank
from paravt.distill.eva_pipeline import EvaSettings, distill_eva
from paravt.distill.job import Outcome, RowCounters, TeacherGaveUp, open_job
from paravt.distill.paravt_pipeline import ParavtSettings, distill_paravt
from paravt.distill.teacher import Endpoint, TeacherClient
from paravt.errors import ParavtError, VideoError
from paravt.jsonl import append_jsonl, read_jsonl

log = logging.getLogger(__name__)
PROGRESS, SFT, REPORT, BANK = (
    "progress.jsonl",
    "sft.parquet",
    "report.json",
    "experience_bank.jsonl",
)


@dataclass(frozen=True)
class Endpoints:
    teacher: Endpoint
    fallback: Endpoint | None = None
    reflector: Endpoint | None = None


def _client(ep: Endpoint | None, cfg: DistillConfig) -> TeacherClient | None:
    if ep is None:
        return None
    return TeacherClient(
        ep,
        timeout_s=cfg.request_timeout_s,
        max_retries=cfg.max_retries,
        backoff_s=cfg.backoff_s,
        temperature=cfg.temperature,
        max_tokens=cfg.max_tokens,
        max_reply_bytes=cfg.max_reply_bytes,
    )


def _finished(path: Path) -> set[str]:
    return {d["id"] for d in read_jsonl(path) if d["status"] in ("accepted", "rejected")}


class _Runner:
    def __init__(self, cfg: DistillConfig, eps: Endpoints, root: str, out: Path) -> None:
        self.cfg, self.root, self.out = cfg, root, out
        self.primary = _client(eps.teacher, cfg)
        self.fallback = _client(eps.fallback, cfg)
        self.reflector = _client(eps.reflector, cfg)
        self.bank = ExperienceBank(out / BANK)
        self.lock = asyncio.Lock()

    async def one(self, row: Row) -> dict[str, Any]:
        t0 = time.perf_counter()
        rec: dict[str, Any] = {"id": row.id, "fallback_used": False, "errors": {}, "refusals": {}}
        tallies: list[RowCounters] = []
        try:
            job = await open_job(
                row,
                self.root,
                overview_max_pixels=self.cfg.overview_max_pixels,
                size_factor=self.cfg.size_factor,
            )
        except (ParavtError, VideoError, OSError) as err:
            return self._done(rec, Outcome(reason="video_error", detail=str(err)), tallies, t0)
        outcome: Outcome | None = None
        for name, client in (("primary", self.primary), ("fallback", self.fallback)):
            if client is None:
                continue
            rec["fallback_used"] = name == "fallback"
            tally = RowCounters()
            tallies.append(tally)
            try:
                outcome = await self._pipeline(job, client, tally)
                break
            except TeacherGaveUp as gave_up:
                kind = "refusals" if gave_up.reply.error is None else "errors"
                rec[kind][name] = rec[kind].get(name, 0) + 1
                outcome = Outcome(
                    reason="refused" if kind == "refusals" else "teacher_error", detail=str(gave_up)
                )
            except Exception as exc:  # noqa: BLE001 - one row's bug must not end a long run
                log.exception("distilling row %s failed", row.id)
                outcome = Outcome(reason="internal_error", detail=f"{type(exc).__name__}: {exc}")
                break
        assert outcome is not None
        return self._done(rec, outcome, tallies, t0)

    async def _pipeline(self, job: Any, client: TeacherClient, tally: RowCounters) -> Outcome:
        c = self.cfg
        if c.pipeline == "eva":
            s = EvaSettings(
                max_turns=c.max_turns,
                size_factor=c.size_factor,
                keep_incorrect=c.keep_incorrect,
                llm_cleanup=c.llm_cleanup,
                top_k=c.bank_top_k,
            )
            return await distill_eva(job, client, s, tally, self.bank, self.reflector)
        s2 = ParavtSettings(
            max_turns=c.max_turns,
            crop_max_frames=c.crop_max_frames,
            crop_max_pixels=c.crop_max_pixels,
            size_factor=c.size_factor,
            keep_incorrect=c.keep_incorrect,
            llm_cleanup=c.llm_cleanup,
        )
        return await distill_paravt(job, client, s2, tally)

    def _done(
        self, rec: dict[str, Any], o: Outcome, tallies: Sequence[RowCounters], t0: float
    ) -> dict[str, Any]:
        retry = o.reason in ("teacher_error", "internal_error")  # tried again by the next run
        status = "accepted" if o.reason is None else "error" if retry else "rejected"
        repairs: Counter = Counter()
        reflector: Counter = Counter()
        for t in tallies:
            repairs.update(t.repairs)
            reflector.update(t.reflector)
        rec.update(
            status=status,
            reason=o.reason,
            detail=o.detail[:300],
            seconds=round(time.perf_counter() - t0, 3),
            repairs=dict(repairs),
            reflector=dict(reflector),
            merges=sum(t.merges for t in tallies),
            requests=sum(t.requests for t in tallies),
            retries=sum(t.retries for t in tallies),
            prompt_tokens=sum(t.prompt_tokens for t in tallies),
            completion_tokens=sum(t.completion_tokens for t in tallies),
            rows=[row_to_record(r) for r in o.rows],
        )
        return rec

    async def aclose(self) -> None:
        for c in (self.primary, self.fallback, self.reflector):
            if c is not None:
                await c.aclose()


async def distill(
    rows: Sequence[Row],
    *,
    root: str,
    out_dir: str | Path,
    cfg: DistillConfig,
    endpoints: Endpoints,
    progress: bool = True,
    data_errors: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Distill ``rows`` into ``out_dir`` (see the module docstring); returns the report, which lists
    ``data_errors`` (the input's error rows, `paravt.data.screen`: never sent to a teacher). One
    run per ``out_dir`` at a time (`paravt.runlock`: a second one raises `OutputLocked` naming the
    first)."""
    with runlock.hold(out_dir, "paravt data distill"):
        return await _distill(
            rows,
            root=root,
            out=Path(out_dir),
            cfg=cfg,
            endpoints=endpoints,
            progress=progress,
            data_errors=data_errors,
        )


async def _distill(
    rows: Sequence[Row],
    *,
    root: str,
    out: Path,
    cfg: DistillConfig,
    endpoints: Endpoints,
    progress: bool,
    data_errors: dict[str, Any] | None,
) -> dict[str, Any]:
    prog = out / PROGRESS
    done = _finished(prog)
    todo = [r for r in rows if r.id not in done]
    runner = _Runner(cfg, endpoints, root, out)
    sem = asyncio.Semaphore(cfg.workers)
    t0 = time.perf_counter()
    bar = _bar(progress, len(todo))

    async def go(row: Row) -> None:
        async with sem:
            rec = await runner.one(row)
        async with runner.lock:
            append_jsonl(
                prog, [rec]
            )  # a line torn by a killed run is ended first: this row stays whole
        if bar is not None:
            bar[0].advance(bar[1])

    try:
        if bar is not None:
            bar[0].start()
        await asyncio.gather(*(go(r) for r in todo))
    finally:
        if bar is not None:
            bar[0].stop()
        await runner.aclose()
    link_videos(out, root, rows)
    return finalize(
        out,
        requested=len(rows),
        skipped=len(rows) - len(todo),
        wall_s=time.perf_counter() - t0,
        pipeline=cfg.pipeline,
        data_errors=data_errors,
    )


def link_videos(out: Path, root: str, rows: Sequence[Row]) -> None:
    """Make ``out/sft.parquet``'s video paths (relative to the input's data root) resolve under
    ``out``, its default data root: ``out/<top>`` is a symlink to ``root/<top>`` for the first
    component of every video path (``videos/…``), so `data check out/sft.parquet` and `train sft`
    need no ``--root``. A symlink inside a data root may point elsewhere (`paravt.data.screen`).
    A name already taken by something else is left alone, with one warning naming the fix."""
    base, here = os.path.abspath(root), os.path.abspath(out)
    if base == here:
        return
    tops = {Path(v).parts[0] for r in rows for v in r.videos if v and not os.path.isabs(v)}
    for top in sorted(tops - {"..", "."}):
        link, target = Path(here) / top, Path(base) / top
        if os.path.islink(link) and os.path.realpath(link) == os.path.realpath(target):
            continue
        if os.path.lexists(link):
            log.warning(
                "%s exists and is not a link to %s: read %s with --root %s (data_root)",
                link,
                target,
                Path(here) / SFT,
                base,
            )
            continue
        os.symlink(target, link, target_is_directory=target.is_dir())


def _bar(enabled: bool, total: int) -> tuple[Any, Any] | None:
    if not enabled:
        return None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    p = Progress(
        TextColumn("distill"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )  # progress on stderr: stdout keeps the report
    return p, p.add_task("rows", total=total)


def _teacher_usage(recs: list[dict[str, Any]]) -> dict[str, Any]:
    """The teacher's refusals, errors, requests, retries and tokens over every attempt (a retried
    row's failed run spent tokens too)."""

    def sum_(key: str) -> int:
        return sum(int(r.get(key, 0)) for r in recs)

    return {
        "refusals": {
            k: sum(r["refusals"].get(k, 0) for r in recs) for k in ("primary", "fallback")
        },
        "teacher_errors": {
            k: sum(r["errors"].get(k, 0) for r in recs) for k in ("primary", "fallback")
        },
        "requests": sum_("requests"),
        "retries": sum_("retries"),
        "tokens": {
            "prompt": sum_("prompt_tokens"),
            "completion": sum_("completion_tokens"),
            "total": sum_("prompt_tokens") + sum_("completion_tokens"),
        },
    }


def nothing_accepted(report: dict[str, Any], out: Path) -> str | None:
    """One line on a run whose report accepts no row (None when it accepted one): the counts of
    ``report.json`` and the fix their cause suggests."""
    if report["accepted"] or report["rows_written"]:
        return None
    rejected = ", ".join(f"{k} {v}" for k, v in report["rejected"].items()) or "none"
    bad = int(report["data_errors"].get("error_rows", 0))
    if report["errored"]:
        fix = "the teacher's requests failed: check --teacher and --teacher-model (a rerun retries"
        fix += " the errored rows)"
    elif report["rejected"]:
        fix = "check the teacher's traces in progress.jsonl, or pass --keep-incorrect to keep"
        fix += " traces whose answer is wrong"
    else:
        fix = "the input had no usable row: `paravt data check` names each data error"
    return (
        f"data distill: 0 of {report['requested']} rows accepted (rejected: {rejected}; errored: "
        f"{report['errored']}; input rows with data errors: {bad}), so no {SFT} was written; "
        f"{out / REPORT} and {out / PROGRESS} keep every row; {fix}"
    )


def finalize(
    out: Path,
    *,
    requested: int,
    skipped: int,
    wall_s: float,
    pipeline: str,
    data_errors: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Rebuild ``sft.parquet`` and ``report.json`` from the progress file (latest record per id);
    with no accepted row there is no ``sft.parquet`` (`nothing_accepted` says why)."""
    recs = read_jsonl(out / PROGRESS)  # a line cut by a killed run is skipped (that row re-runs)
    latest = {r["id"]: r for r in recs}
    rows = [
        row_from_record(d, f"progress {d['id']}")
        for r in latest.values()
        if r["status"] == "accepted"
        for d in r["rows"]
    ]
    if rows:
        write_rows(out / SFT, rows)
    else:  # never an empty sft.parquet that the next command reads as valid input
        (out / SFT).unlink(missing_ok=True)
    ended = list(latest.values())
    repairs: Counter = Counter()
    reflector: Counter = Counter()
    for r in ended:
        repairs.update(r.get("repairs", {}))
        reflector.update(r.get("reflector", {}))
    seconds = [r["seconds"] for r in recs]
    report = {
        "pipeline": pipeline,
        "requested": requested,
        "skipped_finished": skipped,
        "finished": len(ended),
        "accepted": sum(r["status"] == "accepted" for r in ended),
        "rejected": dict(
            sorted(Counter(r["reason"] for r in ended if r["status"] == "rejected").items())
        ),
        "errored": sum(r["status"] == "error" for r in ended),
        "fallback_used": sum(bool(r["fallback_used"]) for r in ended),
        "repaired": sum(bool(r.get("repairs")) for r in ended if r["status"] == "accepted"),
        "repairs": dict(sorted(repairs.items())),
        "reflector": dict(sorted(reflector.items())),
        **_teacher_usage(recs),
        "merges": sum(r.get("merges", 0) for r in ended if r["status"] == "accepted"),
        "rows_written": dict(Counter(f"{x.kind}/{x.mode}" for x in rows)),
        "seconds_per_row": round(sum(seconds) / len(seconds), 3) if seconds else 0.0,
        "wall_s_this_run": round(wall_s, 2),
        "data_errors": data_errors or {"error_rows": 0},
    }
    (out / REPORT).write_text(json.dumps(report, indent=2) + "\n")
    return report
