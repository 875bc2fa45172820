"""Does the main agent's final turn READ its tool response? Teacher-forced, with the report as
written and with its colour swapped (docs/repro-log.md, 2026-12-07 k).

    .venv/bin/python benchmarks/reads_probe.py runs/d/base_seed0 --out runs/reads.json \\
        sft150=runs/d/base_seed0/sft_strong/checkpoints/step_000150/model ...

The traces: the parallel open-question traces of RUN's ``synth/sft.parquet`` whose needle is a
colour (the first ``--rows``), each with its frames (the demo's 64 × 64 pixels). Each is
teacher-forced through the oracle's final think to ``<answer>``; of the colour tokens
(``scenes.NEEDLE_COLORS``, one token each) the one ranked first is counted, once with the tool
response as written (``right``) and once with the reported colour swapped in the tool response
(``scenes.other_color``, the frames and the rest unchanged): ``follows`` (the swapped colour:
the answer reads the report) and ``keeps`` (the true one: it answers from the frames or from
memory). By default these are SFT's own training traces, so ``keeps`` may be memory (``follows``
above chance is reading either way); ``--held-out`` takes the oracle's traces of the held-out
videos at n = 4 instead, where neither memory nor (mostly) the overview holds the colour. One
line per model; OUT holds the counts.
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
from paravt.data.rows import RLRow, SFTRow
from paravt.data.schema import read_rows
from paravt.data.synth.base import REPORT_N as HELD_OUT_N, question_of
from paravt.data.synth.oracle import parallel_trace
from paravt.data.synth.scenes import NEEDLE_COLORS, other_color
from paravt.models.base import ChatMessage
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_policy
from paravt.models.media import model_inputs, sampling_log_softmax

PIXELS = 64 * 64  # the demo preset's overview and crop sizes (repro.presets)
ANSWER = "<answer>"


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


def held_out(run: Path, limit: int, tasks: tuple[str, ...] = ("oe",)) -> list[SFTRow]:
    """The oracle's parallel traces of RUN's HELD-OUT flash questions of ``tasks``
    (``eval.parquet``, videos no stage trains on) at an overview of ``HELD_OUT_N`` frames, which
    misses the flash in most of them (the demo's: 10 of 16): then the right answer is in the tool
    response only. The first ``limit`` of each task."""
    from paravt.data.synth.build import video_specs

    params = json.loads((run / "synth" / "manifest.json").read_text())["params"]
    specs = {s.name: s for s in video_specs(params)[2]}
    out: dict[str, list[SFTRow]] = {t: [] for t in tasks}
    for r in read_rows(run / "synth" / "eval.parquet"):
        e = r.extra_info
        spec = specs[Path(r.videos[0]).stem] if isinstance(r, RLRow) else None
        if spec is not None and e.task in out and spec.needle.kind == "flash":
            at_n = dataclasses.replace(e, nframes=HELD_OUT_N)
            row, _ = parallel_trace(spec, r.videos[0], question_of(e), at_n)
            out[e.task].append(row)
    if not all(out.values()):
        found = {t: len(v) for t, v in out.items()}
        sys.exit(f"reads_probe: {run}/synth/eval.parquet lacks a flash question of a task: {found}")
    return [row for t in tasks for row in out[t][:limit]]


#: truth, swapped colour, the chat as written, the chat with the report swapped
Case = tuple[str, str, list[ChatMessage], list[ChatMessage]]


def cases(rows: list[SFTRow], run: Path) -> list[Case]:
    """Each trace's chat (its frames decoded once, for every model) as written, and with the last
    tool message's reported colour swapped."""
    out = []
    for r in rows:
        truth = str(r.extra_info.answer)
        other = other_color(truth)
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
    ap.add_argument(
        "--held-out",
        action="store_true",
        help=f"the oracle's traces of the held-out open colour questions at n = {HELD_OUT_N} "
        "instead of SFT's own training traces",
    )
    args = ap.parse_args()
    rows = (held_out if args.held_out else traces)(args.run, args.rows)
    todo = cases(rows, args.run)
    result = {}
    for label, path in args.models:
        result[label] = {"model": path, **probe(path, todo)}
        print(json.dumps({"label": label, **result[label]}), flush=True)
    args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
