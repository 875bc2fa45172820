"""ParaVT-Synth builder: videos + sft/rl/eval parquets + manifest (docs/ARCHITECTURE.md §9).

Layout of ``out_dir``::

    videos/train/v0000.mp4 …   videos/eval/e0000.mp4 …
                  (disjoint seeds: eval never reuses a train video)
    sft.parquet   main traces (parallel oracle, sequential, direct) + sub-agent rows
    base.parquet  the simulated pretrained base's data from the TRAIN videos (``synth.base``)
    base_eval.parquet  its probe on the eval videos (frame-supported clip descriptions, MCQ at
                  n = 4, 64)
    rl.parquet    prompts (kind=rl) with ground truth, three tasks per train video
    eval.parquet  prompts (kind=rl, split=eval, nframes=64) on the eval videos
    manifest.json counts, generator parameters, measured needle property, timing
                  (``synth.manifest``)

Every random choice comes from ``numpy.random.default_rng([seed, stream, index])``, so the rows are
identical for a seed (x264 output is deterministic too, but tests compare decoded content).
Videos are written by a process pool (``workers``, default 2).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from paravt.data.schema import OVERVIEW_NS, ExtraInfo, RLRow, Row, SFTRow, write_rows
from paravt.data.synth import oracle
from paravt.data.synth.manifest import Manifest, manifest_counts, needle_shares
from paravt.data.synth.questions import questions_for
from paravt.data.synth.scenes import (
    NEEDLE_KINDS,
    VideoSpec,
    caught_by_overview,
    iter_frames,
    make_spec,
)
from paravt.errors import DataError

_TRAIN, _EVAL, _QUESTIONS = 0, 1, 2
_BASE = 7  # rng streams 7 (train) and 8 (held-out) of the base's clip and overview choices
_SFT_N = 9  # rng stream of the extra tool traces (their own: every other row stays as it was)
#: When the overview at a prompt's n shows the needle, its parallel trace answers directly; the
#: prompt then gets a second parallel trace at one of these small n, kept when that overview misses
#: the needle (a tool trace). With 60-150 s videos, the traces at the prompts' uniform n alone held
#: 110 tool traces in 797 main traces (14%; the paper's SFT is ~30% tool traces, docs/repro.md).
SFT_EXTRA_NS = (4, 8)
EVAL_NFRAMES = 64


def _rng(seed: int, stream: int, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, stream, index])


def _write_video(args: tuple[VideoSpec, str, int]) -> str:
    from paravt.video import write_video

    spec, path, gop = args
    write_video(path, iter_frames(spec), spec.fps, gop=gop, crf=23, bframes=True)
    return path


def _extra(spec: VideoSpec, q: Any, vid: str, nframes: int, split: str) -> ExtraInfo:
    return ExtraInfo(
        id=f"{vid}-{q.task}",
        task=q.task,
        question=q.question,
        answer=q.answer,
        duration=float(spec.duration),
        options=q.options,
        nframes=nframes,
        subset=f"synth-{spec.needle.kind}",
        split=split,
        needle_start=float(spec.needle.start),
        needle_end=float(spec.needle.end),
        needle_kind=spec.needle.kind,
        tool_necessary_at_n={n: not caught_by_overview(spec, n) for n in OVERVIEW_NS},
        source="paravt-synth",
    )


def _rl_row(spec: VideoSpec, rel: str, q: Any, extra: ExtraInfo) -> RLRow:
    system, user = oracle.main_prompt(spec, rel, q, extra.nframes, "parallel")
    return RLRow(extra.id, (system, user), (rel,), extra)


def _train_rows(
    spec: VideoSpec, rel: str, seed: int, index: int, seq_max_calls: int
) -> tuple[list[SFTRow], list[RLRow]]:
    rng = _rng(seed, _QUESTIONS, index)
    sft_rng = _rng(seed, _SFT_N, index)
    sft: list[SFTRow] = []
    rl: list[RLRow] = []
    for q in questions_for(spec.needle, rng):
        n = int(rng.choice(OVERVIEW_NS))
        extra = _extra(spec, q, spec.name, n, "train")
        rl.append(_rl_row(spec, rel, q, extra))
        row, windows = oracle.parallel_trace(spec, rel, q, extra)
        sft.append(row)
        if windows:
            hits = [
                i for i, w in enumerate(windows) if oracle.sub_summary(spec, w) != oracle.NOTHING
            ]
            misses = [i for i in range(len(windows)) if i not in hits]
            chosen = hits + [int(rng.choice(misses))] if misses else hits
            sft.extend(
                oracle.sub_row(spec, rel, q, extra, windows[i], i + 1) for i in sorted(chosen)
            )
        else:
            sft.extend(_extra_tool_trace(spec, rel, q, extra, sft_rng))
        seq = oracle.sequential_trace(spec, rel, q, extra, seq_max_calls=seq_max_calls)
        if seq is not None:
            sft.append(seq)
        direct = oracle.direct_trace(spec, rel, q, replace(extra, nframes=64))
        if direct is not None:
            sft.append(direct)
    return sft, rl


def _extra_tool_trace(
    spec: VideoSpec, rel: str, q: Any, extra: ExtraInfo, rng: np.random.Generator
) -> list[SFTRow]:
    """A parallel trace at a small n (``SFT_EXTRA_NS``) with its sub-agent rows (every hit window,
    one miss), or nothing when the overview at that n shows the needle too."""
    small = replace(extra, nframes=int(rng.choice(SFT_EXTRA_NS)))
    row, windows = oracle.parallel_trace(spec, rel, q, small)
    if not windows:
        return []
    hits = [i for i, w in enumerate(windows) if oracle.sub_summary(spec, w) != oracle.NOTHING]
    misses = [i for i in range(len(windows)) if i not in hits]
    chosen = sorted(hits + ([int(rng.choice(misses))] if misses else []))
    return [
        replace(row, id=f"{extra.id}-par{small.nframes}"),
        *(
            replace(
                oracle.sub_row(spec, rel, q, small, windows[i], i + 1),
                id=f"{extra.id}-n{small.nframes}sub{i + 1}",
            )
            for i in chosen
        ),
    ]


def _base_rows(
    train: list[VideoSpec],
    evals: list[VideoSpec],
    rel: dict[str, str],
    rl: list[Row],
    ev: list[Row],
    seed: int,
) -> tuple[list[Row], list[Row]]:
    """The base's rows of the train videos and its probe rows of the eval videos
    (``synth.base``)."""
    from paravt.data.synth import base

    by_video: dict[str, list[RLRow]] = {}
    for r in rl + ev:
        assert isinstance(r, RLRow)
        by_video.setdefault(r.videos[0], []).append(r)
    hits = base.clip_counts([s.needle.kind for s in train])
    rows = [
        x
        for i, s in enumerate(train)
        for x in base.video_rows(
            s, rel[s.name], by_video[rel[s.name]], _rng(seed, _BASE, i), hits[s.needle.kind]
        )
    ]
    probe = [
        x
        for i, s in enumerate(evals)
        for x in base.video_rows(
            s, rel[s.name], by_video[rel[s.name]], _rng(seed, _BASE + 1, i), 0, held_out=True
        )
    ]
    return rows, probe


def _check_args(
    videos: int, eval_videos: int, min_duration: int, max_duration: int, needle_kinds: Sequence[str]
) -> None:
    if videos < 1 or eval_videos < 0 or not 10 <= min_duration <= max_duration:
        raise DataError(
            f"videos={videos}, eval_videos={eval_videos}, durations [{min_duration}, "
            f"{max_duration}]: "
            "need videos ≥ 1, eval_videos ≥ 0 and 10 ≤ min_duration ≤ max_duration"
        )
    if not needle_kinds or set(needle_kinds) - set(NEEDLE_KINDS):
        raise DataError(
            f"needle_kinds={list(needle_kinds)}: use one or more of {', '.join(NEEDLE_KINDS)}"
        )


def _specs(
    seed: int,
    videos: int,
    eval_videos: int,
    duration: tuple[int, int],
    size: tuple[int, int],
    needle_kinds: Sequence[str],
) -> tuple[list[VideoSpec], list[VideoSpec]]:
    """The training and the held-out videos' specs (disjoint rng streams)."""
    lo, hi = duration
    train = [
        make_spec(
            f"v{i:04d}",
            _rng(seed, _TRAIN, i),
            min_duration=lo,
            max_duration=hi,
            size=size,
            needle_kinds=tuple(needle_kinds),
        )
        for i in range(videos)
    ]
    evals = [
        make_spec(
            f"e{i:04d}",
            _rng(seed, _EVAL, i),
            min_duration=lo,
            max_duration=hi,
            size=size,
            needle_kinds=tuple(needle_kinds),
        )
        for i in range(eval_videos)
    ]
    return train, evals


def _write_videos(
    out: Path, train: list[VideoSpec], evals: list[VideoSpec], gop: int, workers: int
) -> dict[str, str]:
    """Encode every video (``workers`` processes); returns each video's path under ``out``."""
    rel = {
        s.name: f"videos/{'train' if s.name[0] == 'v' else 'eval'}/{s.name}.mp4"
        for s in train + evals
    }
    for sub in ("train", "eval"):
        (out / "videos" / sub).mkdir(parents=True, exist_ok=True)
    jobs = [(s, str(out / rel[s.name]), gop) for s in train + evals]
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(_write_video, jobs, chunksize=4))
    return rel


def _question_rows(
    train: list[VideoSpec],
    evals: list[VideoSpec],
    rel: dict[str, str],
    seed: int,
    seq_max_calls: int,
) -> tuple[list[Row], list[Row], list[Row]]:
    """The SFT and RL rows of the training videos and the eval rows of the held-out ones."""
    sft: list[Row] = []
    rl: list[Row] = []
    for i, spec in enumerate(train):
        s_rows, r_rows = _train_rows(spec, rel[spec.name], seed, i, seq_max_calls)
        sft.extend(s_rows)
        rl.extend(r_rows)
    ev: list[Row] = []
    for i, spec in enumerate(evals):
        for q in questions_for(spec.needle, _rng(seed, _QUESTIONS + 1, i)):
            ev.append(
                _rl_row(spec, rel[spec.name], q, _extra(spec, q, spec.name, EVAL_NFRAMES, "eval"))
            )
    return sft, rl, ev


def _params(
    seed: int,
    videos: int,
    eval_videos: int,
    size: tuple[int, int],
    duration_s: tuple[int, int],
    gop: int,
    seq_max_calls: int,
    needle_kinds: Sequence[str],
) -> dict[str, Any]:
    """The manifest's parameters: the build's arguments and the generator's fixed choices."""
    return {
        "seed": seed,
        "videos": videos,
        "eval_videos": eval_videos,
        "size": list(size),
        "fps_choices": [1, 2],
        "duration_s": list(duration_s),
        "needle_len_s": [3, 8],
        "scene_len_s": [20, 60],
        "max_window_s": oracle.MAX_WINDOW_S,
        "crop_fps": oracle.CROP_FPS,
        "crop_max_frames": oracle.CROP_MAX_FRAMES,
        "gop": gop,
        "crf": 23,
        "seq_max_calls": seq_max_calls,
        "eval_nframes": EVAL_NFRAMES,
        "overview_ns": list(OVERVIEW_NS),
        "needle_kinds": list(needle_kinds),
    }


def build(
    out_dir: str | Path,
    *,
    videos: int = 200,
    eval_videos: int = 40,
    seed: int = 0,
    workers: int = 2,
    size: tuple[int, int] = (64, 64),
    min_duration: int = 60,
    max_duration: int = 300,
    gop: int = 20,
    seq_max_calls: int = 2,
    needle_kinds: Sequence[str] = NEEDLE_KINDS,
) -> Manifest:
    """Build ParaVT-Synth in ``out_dir`` (module docstring); returns the manifest. ``needle_kinds``:
    the needles drawn (all by default; `paravt repro`: flashes only, docs/repro.md)."""
    _check_args(videos, eval_videos, min_duration, max_duration, needle_kinds)
    out = Path(out_dir)
    t0 = time.perf_counter()
    train, evals = _specs(
        seed, videos, eval_videos, (min_duration, max_duration), size, needle_kinds
    )
    rel = _write_videos(out, train, evals, gop, workers)
    t_video = time.perf_counter() - t0
    sft, rl, ev = _question_rows(train, evals, rel, seed, seq_max_calls)
    write_rows(out / "sft.parquet", sft)
    write_rows(out / "rl.parquet", rl)
    write_rows(out / "eval.parquet", ev)
    base_rows, base_eval = _base_rows(train, evals, rel, rl, ev, seed)
    write_rows(out / "base.parquet", base_rows)
    write_rows(out / "base_eval.parquet", base_eval)

    counts = manifest_counts(train, evals, sft, rl, ev, base_rows)
    params = _params(
        seed,
        videos,
        eval_videos,
        size,
        (min_duration, max_duration),
        gop,
        seq_max_calls,
        needle_kinds,
    )
    needle = needle_shares(train, evals, rl, ev)
    manifest = Manifest(
        str(out),
        counts,
        params,
        needle,
        {"videos": round(t_video, 2), "total": round(time.perf_counter() - t0, 2)},
    )
    (out / "manifest.json").write_text(manifest.to_json() + "\n")
    return manifest
