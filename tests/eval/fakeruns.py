"""Synthetic but realistic run directories for the eval tests (hand-written rows, real mp4)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np

from paravt.agent.tally import TokenRow
from paravt.eval.results import CallRow, ResultRow, TranscriptTurn, append_result
from paravt.eval.tokens import t_par, t_seq

V, S, H = 256, 120, 60  # token model used to generate main_input
DURATION = 24.0
NEEDLE = (14.0, 18.0)


def write_needle_video(path: Path) -> Path:
    """24 s at 2 fps, 64×96: grey scenes changing every 8 s, a full-frame red flash 14–18 s."""
    from paravt.video import write_video

    frames = []
    for i in range(int(DURATION * 2)):
        t = i / 2
        if NEEDLE[0] <= t < NEEDLE[1]:
            f = np.zeros((64, 96, 3), np.uint8)
            f[..., 0] = 220
        else:
            f = np.full((64, 96, 3), 60 + 50 * int(t // 8), np.uint8)
            f[:, : 4 + i * 2, 2] = 200  # a blue bar that grows with time
        frames.append(f)
    return write_video(path, frames, fps=2.0)


def result_row(
    i: int, mode: str, *, video: str, rng: random.Random, skill: float = 0.0
) -> ResultRow:
    k = {"none": 0, "parallel": 1 + i % 4, "sequential": 1 + i % 3}[mode]
    if i % 5 == 4:
        k = 0
    task = ["mcq", "tvg", "oe"][i % 3]
    step = DURATION / max(k, 1)
    calls = tuple(
        CallRow(
            "crop_video",
            j * step,
            (j + 1) * step,
            ok=(j != 2),
            error=None if j != 2 else "duplicate window",
            summary="a red flash fills the frame"
            if j * step <= NEEDLE[0] < (j + 1) * step
            else "nothing brief appears",
        )
        for j in range(k)
    )
    main_in = (
        t_seq(k, V, S, H) if mode == "sequential" and k else t_par(k, V, S, H)
    ) + rng.randint(-3, 3)
    score = {"mcq": float(i % 2 == 0), "tvg": round(0.25 * (i % 4) + 0.1, 2), "oe": 0.5}[task]
    if skill and rng.random() < skill:  # a better model: some wrong answers become right
        score = 1.0
    answer = {"mcq": "B", "tvg": f"[{NEEDLE[0]}, {NEEDLE[1]}]", "oe": "red"}[task]
    pred = {"mcq": "B" if score else "C", "tvg": "[13.0, 17.5]", "oe": "red flash"}[task]
    return ResultRow(
        id=f"synth-{i:03d}",
        mode=mode,
        task=task,
        subset="synth" if i % 2 else "needle",
        nframes=[4, 16, 64][i % 3],
        video=video,
        duration=DURATION,
        question="What colour is the brief flash? <video>",
        answer=answer,
        options=("A. green", "B. red", "C. blue", "D. white") if task == "mcq" else None,
        prediction=pred,
        score=score,
        correct=score >= 0.5,
        calls=calls,
        n_calls=k,
        tokens=TokenRow(
            main_visual=V if mode != "sequential" else V * max(k, 1),
            main_text=int(main_in) - (V if mode != "sequential" else V * max(k, 1)),
            sub_visual=64 * k,
            sub_text=40 * k,
            generated=90 + 30 * k,
        ),
        latency_s=round(0.4 + 0.2 * k * (1 if mode == "parallel" else 2), 3),
        end_reason="answer",
        tool_necessary=i % 2 == 1,
        transcript=(
            TranscriptTurn("user", "What colour is the brief flash? <video>"),
            TranscriptTurn(
                "assistant",
                "<think>\nThe overview may miss it.\n</think>\n<tool_call>…</tool_call>",
            ),
            TranscriptTurn("tool", "<tool_response>[1] 00:00–00:12: nothing</tool_response>"),
            TranscriptTurn("assistant", f"<think>\nok\n</think>\n<answer>{pred}</answer>"),
        ),
    )


def write_train_run(d: Path, name: str, kind: str, steps: int, seed: int) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "run.json").write_text(json.dumps({"name": name, "kind": kind, "config": {"lr": 1e-3}}))
    rng = random.Random(seed)
    with (d / "train_log.jsonl").open("w") as f:
        for s in range(steps):
            p = 1 - math.exp(-s / 15)
            row = {
                "step": s,
                ("actor/loss" if kind == "rl" else "train/loss"): 2.0 * (1 - p) + 0.1,
                "f_tau": 0.5 + 0.5 * p,
                "acc": 0.2 + 0.5 * p + rng.uniform(-0.05, 0.05),
            }
            if kind == "rl":
                row |= {
                    "kappa": 1 + 2 * p,
                    "actor/kl_loss": 0.001 * s,
                    "critic/rewards/mean": 0.8 + p,
                    "reward/acc": 0.2 + 0.5 * p,
                    "reward/format": 0.6 + 0.4 * p,
                    "reward/tool": 0.1,
                    "acc/n/4": 0.3 * p,
                    "acc/n/64": 0.8 * p,
                }
            f.write(json.dumps(row) + "\n")


def write_demo(root: Path, *, with_video: bool = True, n: int = 12) -> Path:
    """A demo dir: an SFT run, an RL run with its eval (3 modes), and a base-model eval."""
    (root / "videos").mkdir(parents=True, exist_ok=True)
    video = (
        str(write_needle_video(root / "videos" / "needle.mp4"))
        if with_video
        else str(root / "missing.mp4")
    )
    write_train_run(root / "sft", "sft-tiny", "sft", 40, seed=1)
    write_train_run(root / "rl", "rl-tiny", "rl", 60, seed=2)
    rng = random.Random(0)
    skills = {"parallel": 0.5, "sequential": 0.3, "none": 0.0}
    for ev, gain in ((root / "rl" / "eval", 1.0), (root / "eval_base", 0.4)):
        for mode in ("parallel", "sequential", "none"):
            for i in range(n):
                append_result(
                    ev / "results.jsonl",
                    result_row(i, mode, video=video, rng=rng, skill=gain * skills[mode]),
                )
    return root
