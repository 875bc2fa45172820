"""The SFT cold start's main traces as a MIX (issue 38 item 7; docs/ARCHITECTURE.md §9).

The paper's SFT is imitation data: about 30 % of it are tool traces (LongVT rollouts converted to
parallel, distilled traces), which call tools whatever the overview shows, and the rest answer
without tools; its cold start therefore over-calls (κ 2.50) and RL has that to correct. The mix
here, over the training prompts (one per question, at the prompt's n ~ U(OVERVIEW_NS)):

- tool traces (a share ``tool_share`` of ALL main traces, sequential ones included): the tool
  (parallel) system prompt, ``crop_video`` on the windows covering the whole video
  (`oracle.parallel_trace`), at the prompt's n WHATEVER its overview shows, with the sub-agent rows
  of every window that shows the needle and one that does not (as before);
- sequential traces (`oracle.sequential_trace`, the tool prompt in sequential mode): the same
  demonstration in the other dispatch mode, beside a prompt's parallel tool trace when its overview
  misses the needle and its first hit is within ``seq_max_calls`` windows (as before); they count
  as tool traces;
- direct reasoning traces (the rest): the reasoning (``none``) system prompt, think then answer
  (`oracle.direct_trace`), at a budget whose overview shows the needle (the prompt's n when it
  does, else one drawn among those that do).

Which prompts get tool traces: every prompt that no overview budget shows the needle to (it cannot
be answered directly), then prompts in a seeded permutation until the tool traces (parallel and
sequential) reach ``tool_share`` of all main traces; so the share is exact up to two traces and the
rows are byte-identical for a seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from paravt.data.rows import OVERVIEW_NS, ExtraInfo, SFTRow
from paravt.data.synth import oracle
from paravt.data.synth.questions import Question
from paravt.data.synth.scenes import VideoSpec
from paravt.errors import DataError

TOOL_SHARE = 0.3  # the paper's SFT mix: tool samples 30 % (PAPER.md, "training and data")
_MIX = 12  # rng stream of the mix (its own: the prompts and videos keep theirs)


@dataclass(frozen=True)
class TrainPrompt:
    """One training question at its prompt's overview budget (``extra.nframes``)."""

    spec: VideoSpec
    rel: str
    q: Question
    extra: ExtraInfo


def tool_rows(p: TrainPrompt, rng: np.random.Generator) -> list[SFTRow]:
    """The parallel tool trace of ``p`` and the sub-agent rows of its hit windows and one miss."""
    row, windows = oracle.parallel_trace(p.spec, p.rel, p.q, p.extra)
    hits = [i for i, w in enumerate(windows) if oracle.sub_summary(p.spec, w) != oracle.NOTHING]
    misses = [i for i in range(len(windows)) if i not in hits]
    chosen = sorted(hits + ([int(rng.choice(misses))] if misses else []))
    return [row, *(oracle.sub_row(p.spec, p.rel, p.q, p.extra, windows[i], i + 1) for i in chosen)]


def direct_row(p: TrainPrompt, shown: Sequence[int], rng: np.random.Generator) -> SFTRow:
    """The reasoning trace of ``p`` at the prompt's n when its overview shows the needle, else at
    an n drawn from ``shown`` (the budgets whose overview does)."""
    n = p.extra.nframes if p.extra.nframes in shown else int(rng.choice(list(shown)))
    row = oracle.direct_trace(p.spec, p.rel, p.q, replace(p.extra, nframes=n))
    if row is None:
        raise DataError(f"{p.extra.id}: the overview at n={n} does not show the needle")
    return row


def shown_budgets(spec: VideoSpec) -> list[int]:
    """The overview budgets of ``OVERVIEW_NS`` whose overview holds a needle frame."""
    return [n for n in OVERVIEW_NS if oracle.overview_hit_time(spec, n) is not None]


def sft_mix(
    prompts: Sequence[TrainPrompt], *, seed: int, tool_share: float, seq_max_calls: int
) -> tuple[list[SFTRow], dict[str, Any]]:
    """The main traces (and sub-agent rows) of every prompt, grouped per prompt in input order, and
    the mix's counts for the manifest (module docstring)."""
    if not 0.0 <= tool_share <= 1.0:
        raise DataError(f"tool_share={tool_share}: a share, in [0, 1]")
    seqs = [
        oracle.sequential_trace(p.spec, p.rel, p.q, p.extra, seq_max_calls=seq_max_calls)
        for p in prompts
    ]
    shown = [shown_budgets(p.spec) for p in prompts]
    forced = [i for i, s in enumerate(shown) if not s]
    order = np.random.default_rng([seed, _MIX]).permutation(len(prompts))
    tool: set[int] = set()
    n_seq = 0
    for i in forced + [int(j) for j in order if shown[int(j)]]:
        if shown[i] and len(tool) + n_seq >= tool_share * (len(prompts) + n_seq):
            break
        tool.add(i)
        n_seq += seqs[i] is not None
    rows: list[SFTRow] = []
    for i, p in enumerate(prompts):
        rng = np.random.default_rng([seed, _MIX, i])
        if i in tool:
            rows += tool_rows(p, rng) + ([seqs[i]] if seqs[i] is not None else [])  # type: ignore[list-item]
        else:
            rows.append(direct_row(p, shown[i], rng))
    return rows, mix_counts(rows, tool_share)


def mix_counts(rows: Sequence[SFTRow], tool_share: float) -> dict[str, Any]:
    """The mix as written: main traces by kind, the measured tool share, and the tool traces whose
    overview at their n already shows the needle (the imitation data the paper's cold start
    over-calls from)."""
    main = [r for r in rows if r.kind == "main"]
    tool = [r for r in main if r.mode != "none"]
    suffices = [
        r
        for r in tool
        if r.extra_info.tool_necessary_at_n is not None
        and not r.extra_info.tool_necessary_at_n[r.extra_info.nframes]
    ]
    return {
        "tool_share": tool_share,
        "main": len(main),
        "parallel_tool": sum(r.mode == "parallel" for r in tool),
        "sequential": sum(r.mode == "sequential" for r in tool),
        "direct": len(main) - len(tool),
        "measured_tool_share": round(len(tool) / len(main), 4) if main else None,
        "tool_where_overview_suffices": len(suffices),
    }
