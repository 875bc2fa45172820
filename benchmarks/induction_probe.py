"""The in-context copy of saved models (docs/repro-log.md, 2026-12-07 k): does a base's language
stage form an induction head, and do the stages after it (the alignment stage, the mixture, the
SFT) keep it?

    .venv/bin/python benchmarks/induction_probe.py --out runs/ind.json \\
        base=runs/bases/strong-KEY/train/model \\
        sft125=runs/d/base_seed0/sft_strong/checkpoints/step_000125/model

For each ``LABEL=MODEL``, ``repro.base_probe.induction_probe``: at each gap of
``INDUCTION_GAPS`` the share of a held-out repeat's tokens the model copies (32 runs of 20
tokens of its own words, ``copy_runs.copy_pool``; ``data.synth.copy_runs.induction``). Prints
one line per model; OUT holds every value.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from labelled_models import HELP, labelled_model
from paravt.repro.base_probe import induction_probe


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", type=labelled_model, help=HELP)
    ap.add_argument("--out", type=Path, required=True, help="JSON of every model's copy by gap")
    args = ap.parse_args()
    result = {}
    for label, path in args.models:
        result[label] = {"model": path, "induction": induction_probe(path)}
        gaps = "  ".join(f"gap {g}: {v:.2f}" for g, v in result[label]["induction"].items())
        print(f"{label:>12}  {gaps}", flush=True)
    args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
