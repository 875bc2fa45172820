"""The language stage alone, on one model (docs/repro-log.md, 2026-12-07 k): train a saved model
on the copy rows the base's stage draws (``prior.copy_steps``, ``data.synth.copy_runs``) and
probe its in-context copy every ``--every`` steps; when does the copy form, from which start?

    .venv/bin/python benchmarks/copy_stage_probe.py runs/bases/init-s-KEY --steps 7000 \\
        --every 500 --out runs/copy_init.jsonl [--save runs/init_copy]

The stage's own optimiser and schedule: AdamW at ``--lr`` (the base's 1e-3) after 10 warm-up
steps, batch 8, the row-mean loss (the demo base's ``prior.loss_agg``), seed 0; the pool
``copy_pool`` (``--pool vocab``: every non-special token instead). One JSON line per probe
(step, the last step's loss, seconds, the copy at each gap of ``INDUCTION_GAPS``), printed and
appended to OUT; ``--save`` writes the model at the end.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch

from paravt.config import PriorConfig
from paravt.data.synth.copy_runs import copy_pool, induction
from paravt.models.hf.loading import load_policy
from paravt.repro.base_probe import INDUCTION_GAPS
from paravt.rl.optim_step import optimizer_step
from paravt.rl.prior import copy_batch
from paravt.rl.session import adamw
from paravt.rl.sft import lr_scale, sft_backward


def _vocab(tokenizer: Any) -> list[int]:
    skip = set(tokenizer.all_special_ids) | set(tokenizer.get_added_vocab().values())
    return [i for i in range(len(tokenizer)) if i not in skip]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a saved model directory (the tiny init, a base checkpoint)")
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--pool", choices=("corpus", "vocab"), default="corpus")
    ap.add_argument("--out", type=Path, required=True, help="JSONL of the probes (appended)")
    ap.add_argument("--save", type=Path, default=None)
    args = ap.parse_args()
    torch.manual_seed(0)
    policy = load_policy(args.model)
    model, tok = policy.model, policy.processor.tokenizer
    pool = copy_pool(tok) if args.pool == "corpus" else _vocab(tok)
    opt = adamw(model.parameters(), PriorConfig(lr=args.lr))
    model.train()
    t0 = time.perf_counter()
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = args.lr * lr_scale(step, args.steps, 10, "constant", 1.0)
        opt.zero_grad(set_to_none=True)
        batch = copy_batch(0, step, 8, pool)
        out = sft_backward(model, policy.processor, batch, loss_agg="seq-mean-token-mean")
        optimizer_step(model, opt, 1.0, out.loss)
        if (step + 1) % args.every == 0 or step + 1 == args.steps:
            line = {
                "step": step + 1,
                "loss": round(out.loss, 3),
                "s": round(time.perf_counter() - t0, 1),
                "pool": len(pool),
                **{f"gap{g}": round(induction(model, pool, g), 4) for g in INDUCTION_GAPS},
            }
            print(json.dumps(line), flush=True)
            with args.out.open("a") as f:
                f.write(json.dumps(line) + "\n")
    if args.save:
        model.save_pretrained(args.save)
        policy.processor.save_pretrained(args.save)


if __name__ == "__main__":
    main()
