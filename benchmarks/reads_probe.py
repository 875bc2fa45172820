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

from paravt.data.chat import to_chat_messages
from paravt.data.rows import SFTRow
from paravt.data.schema import read_rows
from paravt.data.synth.scenes import NEEDLE_COLORS
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


def with_report(row: SFTRow, colour: str) -> SFTRow:
    """``row`` with its last tool message's reported colour replaced by ``colour``."""
    msgs = list(row.messages)
    i = max(j for j, m in enumerate(msgs) if m.role == "tool")
    text = msgs[i].content
    assert isinstance(text, str), "a parallel trace's tool response is text"
    msgs[i] = dataclasses.replace(
        msgs[i], content=text.replace(f" {row.extra_info.answer} ", f" {colour} ")
    )
    return dataclasses.replace(row, messages=tuple(msgs))


def first_colour(model: Any, codec: ChatCodec, row: SFTRow, run: Path, colours: list[int]) -> str:
    """The colour ranked first at the token after the final turn's ``<answer>``."""
    chat = to_chat_messages(row, run / "synth", max_pixels=PIXELS, crop_max_pixels=PIXELS)
    ids: list[int] = []
    videos: list[Any] = []
    for m in chat[:-1]:
        enc = codec.encode_message(m)
        ids += enc.ids
        videos += enc.videos
    final = row.messages[-1].text
    head = final[: final.index(ANSWER) + len(ANSWER)]
    ctx = ids + list(codec.generation_prompt("")) + list(codec.encode_text(head))
    inputs = model_inputs(codec.processor, ctx, videos, device="cpu")
    inputs.pop("attention_mask")  # one row, no pads
    hidden = model.model(**inputs, use_cache=False).last_hidden_state
    logp = sampling_log_softmax(model.lm_head(hidden[0, -1:]), suppress_ids=codec.vision_token_ids)[
        0
    ]
    return NEEDLE_COLORS[int(torch.stack([logp[c] for c in colours]).argmax())]


def probe(path: str, rows: list[SFTRow], run: Path) -> dict[str, int]:
    policy = load_policy(path)
    codec, model = ChatCodec(policy.processor), policy.model.eval()
    ids = [codec.encode_text(c) for c in NEEDLE_COLORS]
    if any(len(t) != 1 for t in ids):
        sys.exit(f"reads_probe: a colour is not one token in {path}'s tokenizer: {ids}")
    colours = [t[0] for t in ids]
    out = {"rows": len(rows), "right": 0, "follows": 0, "keeps": 0}
    with torch.no_grad():
        for r in rows:
            truth, other = r.extra_info.answer, swapped(str(r.extra_info.answer))
            out["right"] += first_colour(model, codec, r, run, colours) == truth
            got = first_colour(model, codec, with_report(r, other), run, colours)
            out["follows"] += got == other
            out["keeps"] += got == truth
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a `paravt repro` output directory (its synth/)")
    ap.add_argument("models", nargs="+", help="LABEL=MODEL_DIR, in order")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rows", type=int, default=40)
    args = ap.parse_args()
    rows = traces(args.run, args.rows)
    result = {}
    for item in args.models:
        label, sep, path = item.partition("=")
        if not sep or not Path(path, "config.json").is_file():
            sys.exit(f"reads_probe: {item!r} is not LABEL=MODEL_DIR (a saved model directory)")
        result[label] = {"model": path, **probe(path, rows, args.run)}
        print(json.dumps({"label": label, **result[label]}), flush=True)
    args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
