"""`paravt eval --benchmark`: the papers' benchmarks run through the eval runner, paper protocol.

Protocol (docs/eval.md; defaults in ``EvalConfig``): the overview is the video at
``benchmark_fps`` (1 fps) uniformly subsampled to at most the overview budget
``video.overview_nframes`` (64) frames, all of them when fewer (``paravt.video.overview_count``;
``benchmark_fps`` None: exactly the budget, the authors' eval);
``benchmark_max_pixels`` (224×224) per frame; greedy decoding; the tool
limits of the config. Prompt classes [paper §C]: ``agentic`` runs the tool prompt in the dispatch
mode(s) given (parallel by default), its turns under ``eval.protocol`` (``release``: the authors'
eval driver's, `paravt.eval.benchmarks.release`; ``paravt``: training's); ``reasoning`` the
think/answer prompt without tools (mode ``none``); ``direct`` the question alone, no system
prompt, no think prefix (mode ``none``).

Each benchmark gets ``OUT/<benchmark>/<prompt class>/`` with the runner's ``results.jsonl``
(resume by id) and ``metrics.json``, to which this module adds a ``benchmark`` section per mode
(`benchmark_section`): the headline in the paper's units under the chosen scoring, both scorings'
full aggregates, tool use, tokens per question and errors. A row whose video could not be opened
or whose backend failed scores 0 under both scorings: counted wrong, never dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any, get_args

from paravt.agent import EpisodeInput, EpisodeSettings
from paravt.config import EvalProtocol, PromptClass
from paravt.config.choices import Scoring
from paravt.errors import VideoError
from paravt.eval.benchmarks import release
from paravt.eval.benchmarks.base import AnswerKind, EvalSample, Groups, Scored, ScoredItem
from paravt.eval.benchmarks.registry import get_benchmark, load_benchmark
from paravt.eval.benchmarks.scoring import aggregate, score_lmms, score_paravt
from paravt.eval.metrics import TOKEN_FIELDS
from paravt.eval.results import ResultRow, load_results
from paravt.protocol.prompts import ToolSpec
from paravt.protocol.tags import join_turns
from paravt.video import overview_count, probe

if TYPE_CHECKING:
    from paravt.agent.backend import Backend
    from paravt.rewards import RewardWeights

PROMPT_CLASSES: tuple[str, ...] = get_args(PromptClass)


@dataclass(frozen=True)
class Protocol:
    """How every benchmark sample is shown and scored (plain values from ``EvalConfig``; the
    overview budget ``max_frames`` from ``video.overview_nframes``)."""

    fps: float | None  # None: exactly max_frames
    max_frames: int
    max_pixels: int
    prompt_class: PromptClass
    scoring: Scoring
    turns: EvalProtocol = "release"  # eval.protocol: the agentic class's turn protocol
    seed: int = 0  # LongVideoBench's random fallback

    @property
    def release_turns(self) -> bool:
        """The authors' eval protocol runs this class's turns (`paravt.eval.benchmarks.release`)."""
        return self.prompt_class == "agentic" and self.turns == "release"

    def describe(self) -> dict[str, Any]:
        return {
            "fps": self.fps,
            "max_frames": self.max_frames,
            "max_pixels": self.max_pixels,
            "prompt_class": self.prompt_class,
            "protocol": self.turns if self.prompt_class == "agentic" else None,
            "scoring": self.scoring,
            "decoding": "greedy",
        }


def episode_inputs(
    samples: Sequence[EvalSample], proto: Protocol, kind: AnswerKind = "letter"
) -> list[EpisodeInput]:
    """One episode input per sample, its overview budget from the video's own length (the
    question in the release's words under its protocol). A video that cannot be probed gets the
    cap; its episode then fails to open it and is counted wrong."""
    out = []
    for s in samples:
        if proto.fps is None:
            out.append(s.to_episode_input(nframes=proto.max_frames))
            continue
        try:
            duration = probe(s.video).duration
        except VideoError:
            duration = float(proto.max_frames) / proto.fps
        inp = s.to_episode_input(nframes=overview_count(proto.max_frames, duration, proto.fps))
        out.append(release.question(inp, kind) if proto.release_turns else inp)
    return out


def class_settings(
    base: EpisodeSettings,
    proto: Protocol,
    modes: Sequence[str],
    kind: AnswerKind = "letter",
    tools: Sequence[ToolSpec] = (),
) -> tuple[EpisodeSettings, list[str]]:
    """Episode settings and dispatch modes of the prompt class (greedy; overview pixels of the
    protocol; the agentic class under ``proto.turns``; everything else, tool limits included,
    from ``base``). ``kind`` and ``tools``: the benchmark's answer kind and the tools shown."""
    s = replace(
        base,
        overview_max_pixels=proto.max_pixels,
        sampling=replace(base.sampling, temperature=0.0),
        sub_sampling=replace(base.sub_sampling, temperature=0.0),
    )
    if proto.prompt_class == "agentic":
        tool_modes = [m for m in modes if m != "none"] or ["parallel"]
        if proto.release_turns:
            return release.settings(s, kind, tools), tool_modes
        return replace(s, system_prompt=True), tool_modes
    if proto.prompt_class == "reasoning":
        return replace(s, system_prompt=True), ["none"]
    return replace(s, system_prompt=False, think_prefix=False), ["none"]


def bench_dir(out: Path, bench: str, proto: Protocol) -> Path:
    return out / bench / proto.prompt_class


# ------------------------------------------------------------------------------ scoring rows


def groups_of(s: EvalSample) -> Groups:
    """What the benchmark's aggregation groups a sample by (lmms-eval's keys;
    ``Benchmark.groups``)."""
    return get_benchmark(s.benchmark).groups(s)


def final_response(row: ResultRow) -> str:
    """The text lmms-eval would score: the main agent's last turn (its forced prefix included)."""
    turns = [t.text for t in row.transcript if t.role == "assistant"]
    return turns[-1] if turns else ""


def row_failed(row: ResultRow) -> bool:
    """The backend failed or the episode crashed (end reason "error"), or the video could not be
    opened (an overview was due, none was shown)."""
    return row.end_reason == "error" or (row.nframes > 0 and row.tokens.main_visual == 0)


def score_rows(
    bench: str,
    rows: Sequence[ResultRow],
    samples: Mapping[str, EvalSample],
    scoring: Scoring,
    seed: int = 0,
) -> list[ScoredItem]:
    """Each row scored under ``scoring``; failed rows score 0."""
    content_key = get_benchmark(bench).content_key
    items = []
    for r in rows:
        s = samples.get(r.id)
        failed = row_failed(r)
        if failed:
            sc = Scored("", 0.0)
        elif scoring == "lmms":
            sc = score_lmms(bench, final_response(r), r.answer, r.options, item_id=r.id, seed=seed)
        else:  # our extraction on the whole main-agent completion (what the training reward reads)
            sc = score_paravt(
                bench,
                join_turns([t.text for t in r.transcript if t.role == "assistant"]),
                r.answer,
                r.options,
            )
        key = f"{Path(r.video).name}>>>{r.question}>>>{r.answer}" if content_key else r.id
        items.append(ScoredItem(r.id, sc, groups_of(s) if s else {}, key=key, error=failed))
    return items


def _usage(rows: Sequence[ResultRow]) -> dict[str, Any]:
    if not rows:
        return {}
    tokens = {f: fmean(getattr(r.tokens, f) for r in rows) for f in TOKEN_FIELDS}
    tokens["total_input"] = fmean(r.tokens.total_input for r in rows)
    return {
        "tool_use_rate": fmean(1.0 if r.n_calls else 0.0 for r in rows),
        "calls_per_question": fmean(r.n_calls for r in rows),
        "tokens_per_question": tokens,
        "errors": {
            "video": sum(1 for r in rows if r.end_reason != "error" and row_failed(r)),
            "backend": sum(1 for r in rows if r.end_reason == "error"),
        },
    }


def benchmark_section(
    bench: str, rows: Sequence[ResultRow], samples: Mapping[str, EvalSample], proto: Protocol
) -> dict[str, Any]:
    """``{mode: {"headline", "headline_metric", "scoring", "lmms", "paravt", usage…}}``."""
    out: dict[str, Any] = {}
    for mode in sorted({r.mode for r in rows}):
        mrows = [r for r in rows if r.mode == mode]
        both = {
            sc: aggregate(bench, score_rows(bench, mrows, samples, sc, proto.seed))
            for sc in ("lmms", "paravt")
        }
        head = both[proto.scoring]
        out[mode] = {
            "headline": head["headline"],
            "headline_metric": head["headline_metric"],
            "scoring": proto.scoring,
            "scorings_differ": both["lmms"]["headline"] != both["paravt"]["headline"],
            **both,
            **_usage(mrows),
        }
    return out


@dataclass(frozen=True)
class BenchmarkPlan:
    """Where a benchmark run writes and how much of it runs: its dispatch modes, the output
    directory (``OUT/<benchmark>/<prompt class>/``), a sample limit and the episode workers."""

    modes: tuple[str, ...]
    out: Path
    limit: int | None = None
    workers: int = 4
    progress: bool = True


def run_benchmark(
    bench: str,
    root: Path,
    *,
    backend: Backend,
    base: EpisodeSettings,
    proto: Protocol,
    plan: BenchmarkPlan,
    weights: RewardWeights | None = None,
) -> dict[str, Any]:
    """Load ``bench`` from ``root``, run it through `paravt.eval.runner.evaluate` and write its
    ``metrics.json`` with the ``benchmark`` section added; return those metrics."""
    from paravt.eval.runner import evaluate

    samples = load_benchmark(bench, root, limit=plan.limit)
    kind = get_benchmark(bench).answer_kind
    settings, run_modes = class_settings(base, proto, plan.modes, kind, backend.tools.specs)
    d = bench_dir(plan.out, bench, proto)
    metrics = evaluate(
        episode_inputs(samples, proto, kind),
        backend,
        settings,
        modes=run_modes,
        out=d,
        workers=plan.workers,
        weights=weights,
        progress=plan.progress,
    )
    by_id = {s.id: s for s in samples}
    rows = [r for r in load_results(d / "results.jsonl") if r.id in by_id]
    metrics["benchmark"] = {
        "name": bench,
        "root": str(root),
        "protocol": proto.describe(),
        "by_mode": benchmark_section(bench, rows, by_id, proto),
    }
    (d / "metrics.json").write_text(json.dumps(metrics, indent=1, default=float))
    return metrics


def benchmark_root(root: Path, bench: str, n_benchmarks: int) -> Path:
    """One benchmark: ``root`` is its directory. Several: ``root/<bench>`` each (a benchmark with
    ``shares_dir_of``, videomme_sub, reads that one's directory when it has none of its own)."""
    if n_benchmarks == 1:
        return root
    shared = get_benchmark(bench).shares_dir_of
    if shared and not (root / bench).is_dir():
        return root / shared
    return root / bench
