"""The RL init: the EARLY SFT checkpoint chosen by format stability under τ = 0.7 sampling
(paper Section B: the step-500 checkpoint of 1,500 steps), measured here, not fixed by hand.

Rule (``pick_early``): among the SFT checkpoints (periodic ``checkpoints/step_NNNNNN/model`` and the
final ``model``), score each by a format metric of K sampled rollouts per prompt (``key``:
``closed/all`` by default, the share of well-formed rollouts, or any rollout metric such as
``f_tau``) and take the EARLIEST whose score is within ``tolerance`` of the best. Later
checkpoints that are no more stable are passed over: they only move further from the pretrained
distribution RL has to explore from.

Why ``closed/all`` and not ``f_tau`` (issue 47, M2): the release's format reward reaches its joint
cap of 1.0 without any ``<answer>`` (think 0.2 + ordering 0.3 + balance 0.1 + 0.5 × anchor 0.7),
so under ``f_tau`` a checkpoint that never answers can win: on 2026-11-29 step 25 won with f_tau
0.761 and 0 of 48 answers closed (docs/repro-log.md), and every accuracy downstream was 0. A
rollout counts for ``closed/all`` only with a closed think AND a closed answer (and a closed,
parseable call if it wrote one), so a checkpoint that never answers scores 0 and cannot win
unless no checkpoint ever answers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from paravt.agent import EpisodeInput, EpisodeSettings


@dataclass(frozen=True)
class Candidate:
    step: int
    path: str
    score: float
    metrics: dict[str, float]


@dataclass(frozen=True)
class Selection:
    chosen: Candidate
    key: str
    tolerance: float
    candidates: tuple[Candidate, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "chosen_step": self.chosen.step,
            "chosen_path": self.chosen.path,
            "key": self.key,
            "tolerance": self.tolerance,
            "candidates": [asdict(c) for c in self.candidates],
        }


def pick_early(scores: Sequence[tuple[int, float]], *, tolerance: float) -> int:
    """The earliest step whose score is ≥ best − ``tolerance``."""
    if not scores:
        raise ValueError("no checkpoint to choose from")
    if tolerance < 0:
        raise ValueError(f"tolerance must be ≥ 0, got {tolerance}")
    best = max(s for _, s in scores)
    return min(step for step, s in scores if s >= best - tolerance)


def sft_checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """(step, model dir) of every finished periodic checkpoint and of the final model, by step."""
    from paravt.jsonl import read_jsonl
    from paravt.rl.checkpoint import step_of, verified_checkpoints

    out = [(step_of(c), c / "model") for c in verified_checkpoints(run_dir / "checkpoints")]
    final = run_dir / "model"
    if (final / "config.json").is_file():
        log = run_dir / "train_log.jsonl"
        step = max((int(r["step"]) for r in read_jsonl(log)), default=0) if log.is_file() else 0
        if all(step != s for s, _ in out):
            out.append((step, final))
    return sorted(out)


def select_checkpoint(
    run_dir: Path,
    inputs: Sequence[EpisodeInput],
    settings: EpisodeSettings,
    *,
    k: int,
    tolerance: float,
    key: str = "closed/all",
    seed: int = 0,
    temperature: float = 0.7,
) -> Selection:
    """Probe every SFT checkpoint of ``run_dir`` and apply ``pick_early``; writes
    ``run_dir/selection.json`` with every candidate's measured metrics."""
    from paravt.repro.probe import sample_metrics

    cands = []
    for step, path in sft_checkpoints(run_dir):
        m = sample_metrics(str(path), inputs, settings, k=k, seed=seed, temperature=temperature)
        if key not in m:
            raise ValueError(f"format key {key!r} is not a rollout metric; use one of {sorted(m)}")
        cands.append(Candidate(step, str(path), float(m[key]), m))
    if not cands:
        raise ValueError(f"{run_dir} holds no SFT checkpoint (checkpoints/step_* or model/)")
    step = pick_early([(c.step, c.score) for c in cands], tolerance=tolerance)
    sel = Selection(next(c for c in cands if c.step == step), key, tolerance, tuple(cands))
    (run_dir / "selection.json").write_text(json.dumps(sel.to_dict(), indent=1))
    return sel
