"""The text the tiny models' protocol tokenizer is trained on, written by the functions that write
it at run time (so the vocabulary follows the protocol when a template or a trace changes).

What is covered:
- every system prompt of every template version (parallel / sequential / none / eva, each tool
  spec, k_max 1–8), the user prompt of the default version (durations, the question stems and
  options of ParaVT-Synth), the sub-agent prompts and the sequential observation line
  (`paravt.protocol.prompts`);
- the oracle's SFT traces (thinks, K ``<tool_call>`` blocks, tool-response lines, answers), its
  sub-agent summaries, and the simulated prior's ``<tool_code>`` traces with their long thinks
  (`paravt.data.synth`), on ``n_videos`` synthetic video specs (no video is written);
- Qwen3-VL's per-frame ``<t seconds>`` text, the chat roles, error and observation lines.

What is not covered: free text a trained model may invent (it still encodes, byte-level, just in
more tokens). Tags and special tokens are cut out of the text: they are added tokens of their own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

import numpy as np

from paravt.protocol import prompts, tags as T

_TAGS_RE = re.compile(
    "|".join(
        re.escape(t)
        for t in (
            *T.ALL_TAGS,
            "<video>",
            "<image>",
            "<|endoftext|>",
            "<|vision_start|>",
            "<|vision_end|>",
            "<|image_pad|>",
            "<|video_pad|>",
        )
    )
)


@lru_cache(maxsize=4)
def protocol_corpus(n_videos: int = 60, seed: int = 0) -> tuple[str, ...]:
    """The training texts, tags removed (each piece between two tags is one text); cached, as
    every tiny model a process builds trains the same tokenizer."""
    out: list[str] = []
    for text in _texts(n_videos, seed):
        out.extend(p for p in _TAGS_RE.split(text) if p)
    return tuple(out)


def corpus_digest() -> str:
    """12 hex digits of the SHA-256 of the default corpus: it changes whenever a prompt, an oracle
    or a prior text changes, and with it the protocol tokenizer a tiny model is built with (so the
    keys of the cached inits and pretrained bases hold it: ``paravt.repro.bases``)."""
    import hashlib

    return hashlib.sha256("\x00".join(protocol_corpus()).encode()).hexdigest()[:12]


def _texts(n_videos: int, seed: int) -> Iterator[str]:
    yield from _prompt_texts()
    yield from _trace_texts(n_videos, seed)
    yield from (f"<{t / 2:.1f} seconds>" for t in range(0, 601))  # Qwen3-VL frame timestamps
    yield from (f"{role}\n" for role in ("system", "user", "assistant"))
    yield from (T.fmt_time(s) for s in range(0, 601))


def _prompt_texts() -> Iterator[str]:
    tool_sets = (
        (),
        (prompts.CROP_VIDEO_SPEC,),
        (prompts.FRAME_SELECT_SPEC,),
        (prompts.PYTHON_SPEC,),
        (prompts.CROP_VIDEO_SPEC, prompts.FRAME_SELECT_SPEC, prompts.PYTHON_SPEC),
    )
    for version in prompts.VERSIONS:
        for mode in ("parallel", "sequential", "eva"):
            for tools in tool_sets:
                for k in range(1, 9):
                    yield prompts.system_prompt(mode, tools, k_max=k, version=version)
        yield prompts.system_prompt("none", version=version)
        yield prompts.subagent_system_prompt(version)


def _trace_texts(n_videos: int, seed: int) -> Iterator[str]:
    """Every message of the oracle's traces and of the prior's traces on ``n_videos`` specs."""
    from paravt.data.rows import OVERVIEW_NS, ExtraInfo, RLRow
    from paravt.data.synth import oracle
    from paravt.data.synth.prior import Habit, prior_trace
    from paravt.data.synth.questions import questions_for
    from paravt.data.synth.scenes import make_spec

    for i in range(n_videos):
        rng = np.random.default_rng([seed, 7, i])
        spec = make_spec(f"v{i:04d}", rng)
        rel = f"videos/train/{spec.name}.mp4"
        for q in questions_for(spec.needle, rng):
            n = int(rng.choice(OVERVIEW_NS))
            extra = ExtraInfo(
                id=f"{spec.name}-{q.task}",
                task=q.task,
                question=q.question,
                answer=q.answer,
                duration=float(spec.duration),
                options=q.options,
                nframes=n,
                needle_start=float(spec.needle.start),
                needle_end=float(spec.needle.end),
                needle_kind=spec.needle.kind,
                needle_description=spec.needle.description,
            )
            row, windows = oracle.parallel_trace(spec, rel, q, extra)
            rows = [
                row,
                *(oracle.sub_row(spec, rel, q, extra, w, j + 1) for j, w in enumerate(windows)),
            ]
            rows += [
                r
                for r in (
                    oracle.sequential_trace(spec, rel, q, extra),
                    oracle.direct_trace(spec, rel, q, extra),
                )
                if r is not None
            ]
            for r in rows:
                yield from (m.text for m in r.messages if m.role != "system")
            prompt = RLRow(extra.id, row.messages[:2], (rel,), extra)
            for tool in (True, False):
                habit = Habit(int(rng.integers(2, 7)), json_share=0.5)
                trace = prior_trace(prompt, rng, tool=tool, habit=habit)
                yield from (m.text for m in trace.messages[2:])
            yield prompts.sequential_observation_text(
                float(spec.needle.start), float(spec.needle.end)
            )
            yield f"error: video unavailable: {spec.name}.mp4"
