"""Does the main agent's final turn READ its tool response? Teacher-forced, with the report as
written and with its colour swapped (docs/repro-log.md, 2026-12-07 k).

    .venv/bin/python benchmarks/reads_probe.py runs/d/base_seed0 --out runs/reads.json \\
        sft150=runs/d/base_seed0/sft_strong/checkpoints/step_000150/model ...

The traces: the parallel open-question traces of RUN's ``synth/sft.parquet`` whose needle is a
colour (the first ``--rows``), each with its frames (the demo's 64 × 64 pixels). Each is
teacher-forced through the oracle's final think to ``<answer>``; of the colour tokens
(``scenes.NEEDLE_COLORS``, one token each) the one ranked first is counted, once with the tool
response as written (``right``) and once with the reported colour swapped in the tool response
(colour index + 3, the frames and the rest unchanged): ``follows`` (the swapped colour: the answer
reads the report) and ``keeps`` (the true one: it answers from the frames or from memory). These
are SFT's own training traces, so ``keeps`` may be memory; ``follows`` above chance is reading
either way. One line per model; OUT holds the counts.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import torch

from labelled_models import HELP, labelled_model
from paravt.data.chat import to_chat_messages
from paravt.data.rows import SFTRow
from paravt.data.schema import read_rows
from paravt.data.synth.scenes import NEEDLE_COLORS
from paravt.models.base import ChatMessage
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_policy
from paravt.models.media import model_inputs, sampling_log_softmax

PIXELS = 64 * 64  # the demo preset's overview and crop sizes (repro.presets)
ANSWER = "<answer>"


def swapped(colour: str) -> str:
    return NEEDLE_COLORS[(NEEDLE_COLORS.index(colour) + 3) % len(NEEDLE_COLORS)]


def traces(run: Path, limit: int) -> list[SFTRow]:
    rows = read_rows(run / "synth" / "sft.parquet")
    out = [
        r
        for r in rows
        if isinstance(r, SFTRow)
        and r.mode == "parallel"
        and r.extra_info.task == "oe"
        and r.extra_info.answer in NEEDLE_COLORS
    ]
    if not out:
        sys.exit(f"reads_probe: {run}/synth/sft.parquet holds no parallel colour question")
    return out[:limit]


#: truth, swapped colour, the chat as written, the chat with the report swapped
Case = tuple[str, str, list[ChatMessage], list[ChatMessage]]


def cases(rows: list[SFTRow], run: Path) -> list[Case]:
    """Each trace's chat (its frames decoded once, for every model) as written, and with the last
    tool message's reported colour swapped."""
    out = []
    for r in rows:
        truth = str(r.extra_info.answer)
        other = swapped(truth)
        written = to_chat_messages(r, run / "synth", max_pixels=PIXELS, crop_max_pixels=PIXELS)
        i = max(j for j, m in enumerate(written) if m.role == "tool")
        swap = list(written)
        swap[i] = dataclasses.replace(
            written[i], content=written[i].content.replace(f" {truth} ", f" {other} ")
        )
        out.append((truth, other, written, swap))
    return out


def first_colour(model: Any, codec: ChatCodec, chat: list[ChatMessage], colours: list[int]) -> str:
    """The colour ranked first at the token after the final turn's ``<answer>``."""
    ids: list[int] = []
    videos: list[Any] = []
    for m in chat[:-1]:
        enc = codec.encode_message(m)
        ids += enc.ids
        videos += enc.videos
    final = chat[-1].content
    head = final[: final.index(ANSWER) + len(ANSWER)]
    ctx = ids + list(codec.generation_prompt("")) + list(codec.encode_text(head))
    inputs = model_inputs(codec.processor, ctx, videos, device="cpu")
    inputs.pop("attention_mask")  # one row, no pads
    hidden = model.model(**inputs, use_cache=False).last_hidden_state
    logp = sampling_log_softmax(model.lm_head(hidden[0, -1:]), suppress_ids=codec.vision_token_ids)[
        0
    ]
    return NEEDLE_COLORS[int(torch.stack([logp[c] for c in colours]).argmax())]


def probe(path: str, cases: list[Case]) -> dict[str, int]:
    policy = load_policy(path)
    codec, model = ChatCodec(policy.processor), policy.model.eval()
    ids = [codec.encode_text(c) for c in NEEDLE_COLORS]
    if any(len(t) != 1 for t in ids):
        sys.exit(f"reads_probe: a colour is not one token in {path}'s tokenizer: {ids}")
    colours = [t[0] for t in ids]
    out = {"rows": len(cases), "right": 0, "follows": 0, "keeps": 0}
    with torch.no_grad():
        for truth, other, written, swap in cases:
            out["right"] += first_colour(model, codec, written, colours) == truth
            got = first_colour(model, codec, swap, colours)
            out["follows"] += got == other
            out["keeps"] += got == truth
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a `paravt repro` output directory (its synth/)")
    ap.add_argument("models", nargs="+", type=labelled_model, help=HELP)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rows", type=int, default=40)
    args = ap.parse_args()
    todo = cases(traces(args.run, args.rows), args.run)
    result = {}
    for label, path in args.models:
        result[label] = {"model": path, **probe(path, todo)}
        print(json.dumps({"label": label, **result[label]}), flush=True)
    args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
