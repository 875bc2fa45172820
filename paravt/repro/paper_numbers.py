"""[paper] The ParaVT paper's Table 2 and Table 5 numbers, in ONE place (quoted from
/work/shared/PAPER.md, "ParaVT — results to compare against"; never measured here).

Keys are our `paravt repro` variant names where a variant matches a paper row; the paper's rows
without a variant of ours have their own keys (``base``, ``sequential_dispatch``,
``parallel_dispatch``, ``think_prefix_only``). Used by the repro claims (``repro/claims.py``) and
the report's "paper vs ours" section (``report/paper_vs_ours.py``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Table2Row:
    """One row of the paper's Table 2: training-time f_tau (τ = 0.7), tool calls per rollout κ,
    VideoMME without subtitles (64 frames). None = "–" in the paper."""

    label: str  # as the paper writes the row
    f_tau: float | None
    kappa: float | None
    videomme: float


TABLE2: dict[str, Table2Row] = {
    "base": Table2Row("Qwen3-VL-8B", 0.03, 0.45, 59.9),
    "sft": Table2Row("+ SFT cold start", 0.13, 2.50, 60.7),
    "vanilla_grpo": Table2Row("+ SFT + GRPO (vanilla)", 0.13, 0.02, 62.0),
    "anchoring_only": Table2Row("+ Exploration Anchoring only", 0.35, 0.19, 61.7),
    "gating_only": Table2Row("+ nFrames Gating only", 0.10, 1.36, 61.3),
    "paragrpo": Table2Row("+ SFT + PARA-GRPO", 0.41, 0.21, 62.1),
    "paragrpo_no_rtool": Table2Row("PARA-GRPO − R_tool", 0.33, 0.04, 61.9),
    "paragrpo_no_gamma": Table2Row("PARA-GRPO − γ", 0.36, 0.27, 61.6),
    "sequential_dispatch": Table2Row("sequential dispatch (same ckpt)", None, None, 61.4),
    "parallel_dispatch": Table2Row("parallel dispatch (same ckpt)", None, None, 62.1),
}


@dataclass(frozen=True)
class Table5Row:
    """Closure rates (%) in raw τ = 0.7 rollouts: `<think>` closed, `<tool_call>` closed and
    JSON-parseable, `<answer>` bracketed."""

    label: str
    think: float
    tool_call: float
    answer: float


TABLE5: dict[str, tuple[Table5Row, ...]] = {
    "sft": (Table5Row("cold start (step 500)", 51.8, 47.4, 30.1),),
    "vanilla_grpo": (Table5Row("vanilla, step 9", 26.8, 18.2, 19.6),),
    "think_prefix_only": (Table5Row("think prefix only, no anchor, step 9", 14.3, 9.5, 10.7),),
    "paragrpo": (
        Table5Row("PARA-GRPO, step 9", 30.4, 31.7, 28.6),
        Table5Row("PARA-GRPO, step 19", 58.9, 52.6, 41.1),
    ),
}

#: paper §3 cross-model contrast: Qwen2.5-VL-7B (weak tool prior) keeps format ≈ 0.85, zero tool
#: calls under vanilla GRPO (not a Table 2 row).
WEAK_PRIOR_FORMAT = 0.85
WEAK_PRIOR_KAPPA = 0.0
#: paper §3: PARA-GRPO f_tau peaks at 0.64 after step 45; vanilla stays ≈ 0.13, κ → ~0 within 7
#: steps.
PARAGRPO_PEAK_F_TAU = 0.64
