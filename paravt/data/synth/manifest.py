"""What ``manifest.json`` of a ParaVT-Synth build records: counts of videos and rows, the
generator's parameters, the measured needle property (how often an n-frame overview misses the
needle) and timing (``paravt.data.synth.build`` writes it)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from paravt.data.rows import OVERVIEW_NS, ExtraInfo, Row
from paravt.data.synth.scenes import VideoSpec


@dataclass(frozen=True)
class Manifest:
    out_dir: str
    counts: dict[str, Any]
    params: dict[str, Any]
    needle: dict[str, Any]  # share of prompts whose needle an n-frame overview misses, per n
    timing_s: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def manifest_counts(
    specs: tuple[list[VideoSpec], list[VideoSpec], list[VideoSpec]],
    sft: list[Row],
    rl: list[Row],
    ev: list[Row],
    base_rows: list[Row],
) -> dict[str, Any]:
    """The manifest's counts: videos (train / rl / eval), rows by kind and mode, tasks of the RL
    prompts, needles of the train videos, parallel calls of the SFT traces."""
    train, rl_specs, evals = specs
    return {
        "videos": {"train": len(train), "rl": len(rl_specs), "eval": len(evals)},
        "sft": dict(sorted(Counter(f"{r.kind}/{r.mode}" for r in sft).items())),
        "sft_total": len(sft),
        "rl": len(rl),
        "eval": len(ev),
        "tasks": dict(sorted(Counter(r.extra_info.task for r in rl).items())),
        "needle_kinds": dict(sorted(Counter(s.needle.kind for s in train).items())),
        "base": dict(sorted(Counter(base_kind(r.id) for r in base_rows).items())),
        "parallel_calls": dict(
            sorted(
                Counter(
                    str(
                        sum(
                            m.text.count("<tool_call>") for m in r.messages if m.role == "assistant"
                        )
                    )
                    for r in sft
                    if r.kind == "main" and r.mode == "parallel"
                ).items()
            )
        ),
    }


def base_kind(rid: str) -> str:
    from paravt.data.synth.base import OVQ, SEE
    from paravt.data.synth.drills import READ

    if READ in rid:
        return "drill"
    if SEE in rid:
        return "clip_hit" if rid.split(SEE)[1].startswith("h") else "clip_miss"
    return "overview_qa" if OVQ in rid else "prompt"


def _needle_stats(extras: list[ExtraInfo], specs: list[VideoSpec]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n in OVERVIEW_NS:
        miss = [bool(e.tool_necessary_at_n and e.tool_necessary_at_n[n]) for e in extras]
        approx = [min(1.0, n * (s.needle.end - s.needle.start) / s.duration) for s in specs]
        out[str(n)] = {
            "tool_necessary_share": round(float(np.mean(miss)), 4) if miss else None,
            "approx_catch_prob": round(float(np.mean(approx)), 4) if approx else None,
        }
    return out


def needle_shares(
    specs: tuple[list[VideoSpec], list[VideoSpec], list[VideoSpec]],
    train: Sequence[Row],
    rl: list[Row],
    ev: list[Row],
) -> dict[str, Any]:
    """Per overview n, the share of the training videos' prompts (their SFT traces), the RL prompts
    and the eval prompts whose needle that overview misses (three prompts per video)."""
    train_specs, rl_specs, eval_specs = specs
    return {
        name: _needle_stats([r.extra_info for r in rows], [s for s in vids for _ in range(3)])
        for name, rows, vids in (
            ("train_prompts", train, train_specs),
            ("rl_prompts", rl, rl_specs),
            ("eval_prompts", ev, eval_specs),
        )
    }
