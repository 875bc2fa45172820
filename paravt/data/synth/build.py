"""ParaVT-Synth builder: videos + sft/rl/eval parquets + manifest (docs/ARCHITECTURE.md §9).

Layout of ``out_dir``::

    videos/train/v0000.mp4 …   videos/rl/r0000.mp4 …   videos/eval/e0000.mp4 …
                  (disjoint rng streams: no video serves two of SFT, RL and eval)
    sft.parquet   the main-trace mix of the TRAIN videos (``synth.sft_mix``: ≈ ``tool_share`` tool
                  traces under the tool prompt whatever the overview shows, sequential traces, the
                  rest direct reasoning traces) + sub-agent rows
    base.parquet  the simulated pretrained base's data from the TRAIN videos (``synth.base``)
    base_eval.parquet  its probe on the eval videos (frame-supported clip descriptions, MCQ and
                  open question at n = 4, 64, an open question with a swapped tool report)
    rl.parquet    prompts (kind=rl) with ground truth, three tasks per RL video: disjoint from every
                  SFT and base trace (the paper's RL set is disjoint from its SFT)
    eval.parquet  prompts (kind=rl, split=eval, nframes=64) on the eval videos
    manifest.json counts, generator parameters, measured needle property, timing
                  (``synth.manifest``)

Every random choice comes from ``numpy.random.default_rng([seed, stream, index])``, so the rows are
identical for a seed (x264 output is deterministic too, but tests compare decoded content).
Videos are written by a process pool (``workers``, default 2).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from paravt.data.rows import OVERVIEW_NS, ExtraInfo, RLRow, Row
from paravt.data.schema import write_rows
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
from paravt.data.synth.sft_mix import TOOL_SHARE, TrainPrompt, sft_mix
from paravt.errors import DataError

_TRAIN, _EVAL, _QUESTIONS = 0, 1, 2
_BASE = 7  # rng streams 7 (train) and 8 (held-out) of the base's clip and overview choices
_RL, _RL_QUESTIONS = 10, 11  # rng streams of the RL videos and of their questions
_SUBDIR = {"v": "train", "r": "rl", "e": "eval"}  # a video's name prefix → its folder
EVAL_NFRAMES = 64


def _rng(seed: int, stream: int, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, stream, index])


def _write_video(args: tuple[VideoSpec, str, int]) -> str:
    from paravt.video import Encoding, write_video

    spec, path, gop = args
    write_video(path, iter_frames(spec), spec.fps, encoding=Encoding(gop=gop, crf=23, bframes=True))
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
        needle_description=spec.needle.description,
        tool_necessary_at_n={n: not caught_by_overview(spec, n) for n in OVERVIEW_NS},
        source="paravt-synth",
    )


def _rl_row(spec: VideoSpec, rel: str, q: Any, extra: ExtraInfo) -> RLRow:
    system, user = oracle.main_prompt(spec, rel, q, extra.nframes, "parallel")
    return RLRow(extra.id, (system, user), (rel,), extra)


def _train_prompts(spec: VideoSpec, rel: str, seed: int, index: int) -> list[TrainPrompt]:
    """A training video's three questions, each at an n ~ U(OVERVIEW_NS) (its SFT traces' and the
    base's prompts)."""
    rng = _rng(seed, _QUESTIONS, index)
    out = []
    for q in questions_for(spec.needle, rng):
        n = int(rng.choice(OVERVIEW_NS))
        out.append(TrainPrompt(spec, rel, q, _extra(spec, q, spec.name, n, "train")))
    return out


def _prompt_rows(
    specs: list[VideoSpec], rel: dict[str, str], seed: int, stream: int, split: str
) -> list[Row]:
    """The prompt rows (kind=rl) of ``specs``: three questions each, at an n ~ U(OVERVIEW_NS) for
    RL, at ``EVAL_NFRAMES`` for eval."""
    rows: list[Row] = []
    for i, spec in enumerate(specs):
        rng = _rng(seed, stream, i)
        for q in questions_for(spec.needle, rng):
            n = EVAL_NFRAMES if split == "eval" else int(rng.choice(OVERVIEW_NS))
            rows.append(_rl_row(spec, rel[spec.name], q, _extra(spec, q, spec.name, n, split)))
    return rows


def _base_rows(
    train: list[VideoSpec],
    evals: list[VideoSpec],
    rel: dict[str, str],
    prompts: list[Row],
    ev: list[Row],
    seed: int,
) -> tuple[list[Row], list[Row]]:
    """The base's rows of the train videos (their prompts: never an RL video's) and its probe rows
    of the eval videos (``synth.base``)."""
    from paravt.data.synth import base

    by_video: dict[str, list[RLRow]] = {}
    for r in prompts + ev:
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
    videos: int,
    rl_videos: int,
    eval_videos: int,
    min_duration: int,
    max_duration: int,
    needle_kinds: Sequence[str],
) -> None:
    if videos < 1 or eval_videos < 0 or not 10 <= min_duration <= max_duration:
        raise DataError(
            f"videos={videos}, eval_videos={eval_videos}, durations [{min_duration}, "
            f"{max_duration}]: "
            "need videos ≥ 1, eval_videos ≥ 0 and 10 ≤ min_duration ≤ max_duration"
        )
    if rl_videos < 1:
        raise DataError(f"rl_videos={rl_videos}: RL needs at least one video of its own")
    if not needle_kinds or set(needle_kinds) - set(NEEDLE_KINDS):
        raise DataError(
            f"needle_kinds={list(needle_kinds)}: use one or more of {', '.join(NEEDLE_KINDS)}"
        )


def _specs(
    seed: int,
    counts: tuple[int, int, int],
    duration: tuple[int, int],
    size: tuple[int, int],
    needle_kinds: Sequence[str],
) -> tuple[list[VideoSpec], list[VideoSpec], list[VideoSpec]]:
    """The training, RL and held-out videos' specs (``counts`` in that order; disjoint rng
    streams)."""
    lo, hi = duration
    return tuple(  # type: ignore[return-value]
        [
            make_spec(
                f"{prefix}{i:04d}",
                _rng(seed, stream, i),
                min_duration=lo,
                max_duration=hi,
                size=size,
                needle_kinds=tuple(needle_kinds),
            )
            for i in range(count)
        ]
        for prefix, stream, count in zip("vre", (_TRAIN, _RL, _EVAL), counts, strict=True)
    )


def video_specs(
    params: Mapping[str, Any],
) -> tuple[list[VideoSpec], list[VideoSpec], list[VideoSpec]]:
    """The training, RL and held-out videos' specs of a build, from its manifest's ``params``."""
    return _specs(
        int(params["seed"]),
        (int(params["videos"]), int(params["rl_videos"]), int(params["eval_videos"])),
        (int(params["duration_s"][0]), int(params["duration_s"][1])),
        (int(params["size"][0]), int(params["size"][1])),
        tuple(params["needle_kinds"]),
    )


def _write_videos(out: Path, specs: list[VideoSpec], gop: int, workers: int) -> dict[str, str]:
    """Encode every video (``workers`` processes); returns each video's path under ``out``."""
    rel = {s.name: f"videos/{_SUBDIR[s.name[0]]}/{s.name}.mp4" for s in specs}
    for sub in _SUBDIR.values():
        (out / "videos" / sub).mkdir(parents=True, exist_ok=True)
    jobs = [(s, str(out / rel[s.name]), gop) for s in specs]
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(_write_video, jobs, chunksize=4))
    return rel


def _question_rows(
    specs: tuple[list[VideoSpec], list[VideoSpec], list[VideoSpec]],
    rel: dict[str, str],
    seed: int,
    seq_max_calls: int,
    tool_share: float,
) -> tuple[list[Row], list[Row], list[Row], list[Row], dict[str, Any]]:
    """SFT rows and prompt rows of the training videos, RL rows of the RL videos, eval rows of the
    held-out ones, and the SFT mix's counts."""
    train, rl_specs, evals = specs
    prompts = [
        p for i, spec in enumerate(train) for p in _train_prompts(spec, rel[spec.name], seed, i)
    ]
    sft, mix = sft_mix(prompts, seed=seed, tool_share=tool_share, seq_max_calls=seq_max_calls)
    train_prompts: list[Row] = [_rl_row(p.spec, p.rel, p.q, p.extra) for p in prompts]
    rl = _prompt_rows(rl_specs, rel, seed, _RL_QUESTIONS, "rl")
    ev = _prompt_rows(evals, rel, seed, _QUESTIONS + 1, "eval")
    return list(sft), train_prompts, rl, ev, mix


def _params(
    seed: int,
    counts: tuple[int, int, int],
    size: tuple[int, int],
    duration_s: tuple[int, int],
    gop: int,
    seq_max_calls: int,
    needle_kinds: Sequence[str],
    tool_share: float,
) -> dict[str, Any]:
    """The manifest's parameters: the build's arguments and the generator's fixed choices."""
    from paravt.config import PROMPT_VERSION

    return {
        "seed": seed,
        "videos": counts[0],
        "rl_videos": counts[1],
        "eval_videos": counts[2],
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
        "tool_share": tool_share,
        "prompt_version": PROMPT_VERSION,
        "eval_nframes": EVAL_NFRAMES,
        "overview_ns": list(OVERVIEW_NS),
        "needle_kinds": list(needle_kinds),
    }


@dataclass(frozen=True)
class SceneSpec:
    """How the videos look: frame size (w, h), durations in seconds, keyframe interval in frames
    and the needles drawn (all by default; `paravt repro`: flashes only, docs/repro.md)."""

    size: tuple[int, int] = (64, 64)
    min_duration: int = 60
    max_duration: int = 300
    gop: int = 20
    needle_kinds: Sequence[str] = NEEDLE_KINDS


def build(
    out_dir: str | Path,
    *,
    videos: int = 200,
    rl_videos: int | None = None,
    eval_videos: int = 40,
    seed: int = 0,
    workers: int = 2,
    scenes: SceneSpec = SceneSpec(),
    seq_max_calls: int = 2,
    tool_share: float = TOOL_SHARE,
) -> Manifest:
    """Build ParaVT-Synth in ``out_dir`` (module docstring); returns the manifest. ``rl_videos``:
    the RL prompts' own videos (None: a quarter of ``videos``, at least 1); ``scenes``: how the
    videos look; ``tool_share``: the share of tool traces among the SFT main traces
    (``synth.sft_mix``)."""
    size, gop, needle_kinds = scenes.size, scenes.gop, scenes.needle_kinds
    min_duration, max_duration = scenes.min_duration, scenes.max_duration
    n_rl = max(1, math.ceil(videos / 4)) if rl_videos is None else rl_videos
    _check_args(videos, n_rl, eval_videos, min_duration, max_duration, needle_kinds)
    out = Path(out_dir)
    t0 = time.perf_counter()
    counts = (videos, n_rl, eval_videos)
    specs = _specs(seed, counts, (min_duration, max_duration), size, needle_kinds)
    train, rl_specs, evals = specs
    rel = _write_videos(out, [*train, *rl_specs, *evals], gop, workers)
    t_video = time.perf_counter() - t0
    sft, prompts, rl, ev, mix = _question_rows(specs, rel, seed, seq_max_calls, tool_share)
    write_rows(out / "sft.parquet", sft)
    write_rows(out / "rl.parquet", rl)
    write_rows(out / "eval.parquet", ev)
    base_rows, base_eval = _base_rows(train, evals, rel, prompts, ev, seed)
    write_rows(out / "base.parquet", base_rows)
    write_rows(out / "base_eval.parquet", base_eval)
    manifest = Manifest(
        str(out),
        {**manifest_counts(specs, sft, rl, ev, base_rows), "sft_mix": mix},
        _params(
            seed,
            counts,
            size,
            (min_duration, max_duration),
            gop,
            seq_max_calls,
            needle_kinds,
            tool_share,
        ),
        needle_shares(specs, prompts, rl, ev),
        {"videos": round(t_video, 2), "total": round(time.perf_counter() - t0, 2)},
    )
    (out / "manifest.json").write_text(manifest.to_json() + "\n")
    return manifest
