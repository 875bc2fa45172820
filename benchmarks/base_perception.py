"""What can the s model learn to SEE, and how fast? Trains a tiny model on a subset of a base's
rows (no habit traces) and runs the base probe on held-out videos: the measurements that chose
the base's design in docs/repro.md ("The simulated pretrained base").

    # perception rows of flash videos:
    .venv/bin/python benchmarks/base_perception.py --synth runs/bases/synth-KEY \\
        --init runs/bases/init-s-KEY --steps 800 --out runs/exp/flash800 --kind flash
    .venv/bin/python benchmarks/base_perception.py ... --init runs/exp/flash800 --rows clips \\
        --steps 1200

``--rows all``: clip descriptions, overview QA and drills; ``clips``: clip descriptions only;
``overview``: the overview questions only.
``--kind``: keep the videos of one needle kind (the probe too: its rows are written to
``SYNTH/base_eval_KIND.parquet``, beside the videos they name). Prints the loss every 100 steps
and the probe (``repro.base_probe.score_probe``, with its per-kind rates) as the last line.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from paravt.config import ModelConfig, SFTConfig
from paravt.data.chat import to_chat_messages
from paravt.data.schema import read_rows, write_rows
from paravt.data.synth.base import OVQ, SEE, is_base_row
from paravt.repro.base_probe import run_probe
from paravt.rl.sequence import build_sequence
from paravt.rl.session import PolicySession
from paravt.rl.sft import SFTTrainer

PIXELS, FACTOR = 64 * 64, 32  # the s presets' frames (paravt.repro.presets.base_config)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--synth",
        type=Path,
        required=True,
        help="a base's ParaVT-Synth (base.parquet, base_eval.parquet)",
    )
    ap.add_argument(
        "--init", required=True, help="the model to start from (a random tiny init or a checkpoint)"
    )
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rows", choices=("all", "clips", "overview"), default="all")
    ap.add_argument("--kind", default=None, help="flash | digit | shape: that kind's videos only")
    ap.add_argument("--lr", type=float, default=1e-3)
    a = ap.parse_args()

    def keep(r) -> bool:  # noqa: ANN001
        return a.kind is None or r.extra_info.needle_kind == a.kind

    marker = {"all": "", "clips": SEE, "overview": OVQ}[a.rows]
    rows = [
        r
        for r in read_rows(a.synth / "base.parquet")
        if is_base_row(r) and marker in r.id and keep(r)
    ]
    a.out.mkdir(parents=True, exist_ok=True)
    probe = a.synth / "base_eval.parquet"
    if a.kind:  # the probe's rows of that kind, beside the videos they name
        probe = a.synth / f"base_eval_{a.kind}.parquet"
        write_rows(probe, [r for r in read_rows(a.synth / "base_eval.parquet") if keep(r)])
    s = PolicySession.create(ModelConfig(path=str(a.init)), SFTConfig(lr=a.lr))
    examples = [
        build_sequence(
            to_chat_messages(
                r, a.synth, max_pixels=PIXELS, crop_max_pixels=PIXELS, size_factor=FACTOR
            ),
            s.codec,
            row_id=r.id,
        )
        for r in rows
    ]
    trainer = SFTTrainer(
        examples,
        s.model,
        s.processor,
        s.optimizer,
        8,
        1.0,
        total_steps=a.steps,
        lr=a.lr,
        warmup_steps=10,
        lr_decay="cosine",
        min_lr_ratio=0.1,
    )
    t0, losses = time.perf_counter(), []
    for step in range(a.steps):
        losses.append(trainer.step(step)["train/loss"])
        if (step + 1) % 100 == 0:
            print(
                f"step {step + 1} loss {sum(losses[-100:]) / 100:.3f} "
                f"{(time.perf_counter() - t0) / (step + 1):.3f} s/step",
                flush=True,
            )
    s.model.save_pretrained(a.out)
    s.processor.save_pretrained(a.out)
    res = run_probe(
        str(a.out),
        probe,
        max_new_tokens=48,
        max_pixels=PIXELS,
        crop_max_pixels=PIXELS,
        size_factor=FACTOR,
    )
    (a.out / "probe.json").write_text(json.dumps(res, indent=1))
    print(
        json.dumps(
            {
                "rows": len(rows),
                "steps": a.steps,
                **{k: v for k, v in res.items() if k != "samples"},
            }
        )
    )


if __name__ == "__main__":
    main()
