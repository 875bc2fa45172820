"""Does the main agent's turn name the task its QUESTION asks for? Teacher-forced, in the first
turn and in the final one (after the tool response) (docs/repro-log.md, 2026-12-07 m and n).

    .venv/bin/python benchmarks/task_probe.py runs/d/base_seed0 --out runs/task.json \\
        sft250=runs/d/base_seed0/sft_strong/checkpoints/step_000250/model ...

The traces: the oracle's parallel traces of RUN's held-out flash questions of the three tasks at
n = 4 (``reads_probe.held_out``; the first ``--rows`` of each task). Every main-agent think opens
with what the question asks for (``oracle.ASKS``: "The question asks for the option letter." /
"… the colour." / "… the time span."). The protocol tokenizer merges that sentence's head into
one token and its end into another (``The question asks f`` + ``or the option letter.``), so the
probe forces each turn up to the head AS THE TRACE ENCODES IT (``HEAD``), and reads which task's
next token the model ranks first, the tasks' tokens being those that follow the head in the
traces' own encodings (one set per task; disjoint, or the probe exits). One line per model;
OUT holds, per model and turn (``first``, ``final``), the traces whose ranked-first task is their
own (``right``) of ``rows`` per task, and which task the ranked-first token named (``named``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import torch

from labelled_models import HELP, labelled_model
from paravt.data.chat import to_chat_messages
from paravt.data.rows import TASKS
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_policy
from paravt.models.media import model_inputs, sampling_log_softmax
from reads_probe import PIXELS, held_out

HEAD = "The question asks f"
TURNS = ("first", "final")

#: one forced turn: its task, its turn, the context's ids, its videos, the task's next token
Forced = tuple[str, str, list[int], list[Any], int]


def forced_turns(codec: ChatCodec, chat: list[Any], task: str) -> list[Forced]:
    """The trace's first and final assistant turns, each cut right after ``HEAD``'s last token as
    the whole trace encodes it, with the token that follows there."""
    encs = [codec.encode_message(m) for m in chat]
    turns = [i for i, m in enumerate(chat) if m.role == "assistant"]
    out = []
    for name, i in zip(TURNS, (turns[0], turns[-1]), strict=True):
        ids = encs[i].ids
        cut = next(
            (k for k in range(1, len(ids)) if codec.decode(ids[:k]).endswith(HEAD)),
            None,
        )
        if cut is None:
            sys.exit(f"task_probe: the {name} turn never reaches {HEAD!r} at a token boundary")
        before = [t for e in encs[:i] for t in e.ids]
        videos = [v for e in encs[:i] for v in e.videos]
        out.append((task, name, before + list(ids[:cut]), videos, int(ids[cut])))
    return out


def probe(path: str, chats: list[tuple[str, list[Any]]]) -> dict[str, Any]:
    """``chats``: each trace's task and chat, its frames decoded once for every model."""
    policy = load_policy(path)
    codec, model = ChatCodec(policy.processor), policy.model.eval()
    todo = [f for task, chat in chats for f in forced_turns(codec, chat, task)]
    owner: dict[int, str] = {}
    for task, _, _, _, token in todo:
        if owner.setdefault(token, task) != task:
            sys.exit(f"task_probe: token {token} follows {HEAD!r} in two tasks' traces")
    tokens = sorted(owner)
    right = {t: dict.fromkeys(TASKS, 0) for t in TURNS}
    named = {t: dict.fromkeys(TASKS, 0) for t in TURNS}
    with torch.no_grad():
        for task, turn, ctx, videos, _ in todo:
            inputs = model_inputs(codec.processor, ctx, videos, device="cpu")
            inputs.pop("attention_mask")  # one row, no pads
            hidden = model.model(**inputs, use_cache=False).last_hidden_state
            logp = sampling_log_softmax(
                model.lm_head(hidden[0, -1:]), suppress_ids=codec.vision_token_ids
            )[0]
            got = owner[tokens[int(torch.stack([logp[t] for t in tokens]).argmax())]]
            right[turn][task] += got == task
            named[turn][got] += 1
    of = Counter(task for task, turn, *_ in todo if turn == "first")
    return {
        "rows": dict(of),
        **{t: {"right": right[t], "named": named[t]} for t in TURNS},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a `paravt repro` output directory (its synth/)")
    ap.add_argument("models", nargs="+", type=labelled_model, help=HELP)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rows", type=int, default=16, help="held-out traces per task")
    args = ap.parse_args()
    chats = [
        (
            r.extra_info.task,
            to_chat_messages(r, args.run / "synth", max_pixels=PIXELS, crop_max_pixels=PIXELS),
        )
        for r in held_out(args.run, args.rows, TASKS)
    ]
    result = {}
    for label, path in args.models:
        result[label] = {"model": path, **probe(path, chats)}
        print(json.dumps({"label": label, **result[label]}), flush=True)
    args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
