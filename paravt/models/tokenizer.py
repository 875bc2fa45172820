"""Offline byte-level BPE tokenizers for the tiny models, with Qwen's special tokens and chat
format (real checkpoints bring their own tokenizer). Two builders, chosen by ``TokenizerKind``:

- ``protocol`` (the default since issue 26): ``PROTOCOL_VOCAB`` tokens trained on the protocol's
  own text (`paravt.data.synth.corpus`: prompts, oracle and prior traces, tool responses,
  frame timestamps). Only newline runs and digit runs are cut out before BPE, so merges cross
  spaces and punctuation: the protocol's fixed phrases and JSON keys become one or a few tokens,
  and a number is its own token(s), never fused with the punctuation around it (tokens per
  rollout and per SFT row ≈ 0.3× the legacy builder's; ``benchmarks/limits.py`` measures it).
- ``legacy``: the ≈ 530-token builder of the first tiny checkpoints, on Qwen2's pre-tokenizer
  regex (words, single digits). Kept so that a measurement can compare the two; a checkpoint
  saves its tokenizer, so old checkpoints load with theirs whatever the default.

Both isolate newline runs, so "prefix ids + continuation ids == ids of prefix + continuation" at
the boundaries the protocol uses (``<think>\\n`` followed by text, a turn's closing newline);
protocol tags and Qwen's special tokens are single added tokens in both.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Literal, get_args

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from paravt.errors import ModelError
from paravt.protocol.tags import PROTOCOL_TAGS, fmt_time, render_crop_call, render_result_line

QWEN_SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
)

# Qwen2's pre-tokenizer pattern (numbers split into single digits).
_QWEN_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

_COLOURS = ("red", "green", "blue", "yellow", "purple", "orange", "white", "black", "grey", "pink")
_SHAPES = ("circle", "square", "triangle", "star", "digit", "flash", "scene", "background")
_PHRASES = (
    "You are a helpful assistant.",
    "The answer is",
    "Answer with the option letter.",
    "Watch the video and answer the question.",
    "What colour is the flash?",
    "When does the flash appear?",
    "Nothing brief appears in this window.",
    "I need to look closer at",
    "The video is",
    "seconds long.",
    "Options:",
    "Let me split the video into windows and check each one.",
    "I can see",
    "in the overview",
    "Summarise what happens in this clip.",
    "between",
    "and",
    "at",
    "from",
    "to",
    "the",
    "a",
)


def _legacy_corpus(n_lines: int = 3000, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    scaffold = [f"<|im_start|>{r}\n" for r in ("system", "user", "assistant")]
    lines: list[str] = (list(_PHRASES) + scaffold) * 30 + list(PROTOCOL_TAGS)
    lines += [str(i) for i in range(601)] + [fmt_time(s) for s in range(0, 601, 7)]
    for _ in range(n_lines):
        a = rng.randrange(0, 580)
        b = a + rng.randrange(5, 60)
        colour, shape = rng.choice(_COLOURS), rng.choice(_SHAPES)
        letter = rng.choice("ABCDEF")
        lines.append(
            f"<think>\nI need to look closer at {fmt_time(a)} to {fmt_time(b)}.\n</think>\n"
            f"{render_crop_call(a, b)}"
        )
        lines.append(
            render_result_line(rng.randrange(1, 9), a, b, f"A {colour} {shape} at {a} seconds.")
        )
        lines.append(
            f"<answer>{letter}</answer> The answer is {letter}. <answer>[{a}, {b}]</answer>"
        )
        lines.append(f"{letter}. {colour} {shape}  <{a / 2:.1f} seconds> {a}.{b % 10}s")
    return lines


TokenizerKind = Literal["protocol", "legacy"]
TOKENIZER_KINDS: tuple[str, ...] = get_args(TokenizerKind)
PROTOCOL_VOCAB = (
    2048  # BPE tokens before the added ones (docs/performance-log.md: the choice, measured)
)
LEGACY_VOCAB = 520
# Pre-tokens of the protocol BPE: newline runs (with the spaces before them) and digit runs are cut
# out, everything else between them is one pre-token (merges cross spaces and punctuation).
_PROTOCOL_SPLIT = r"\s*[\r\n]+|\p{N}+"


def train_tokenizer(
    kind: str = "protocol",
    *,
    corpus: Sequence[str] = (),
    vocab_size: int | None = None,
    seed: int = 0,
) -> PreTrainedTokenizerFast:
    """The tiny models' tokenizer of ``kind`` (module docstring); deterministic for (kind,
    corpus, vocab_size, seed), offline, about a second. ``protocol`` trains on ``corpus`` (the
    protocol's own text: `paravt.data.synth.corpus.protocol_corpus`, passed in by the builder
    because the synthetic task's traces live above this layer)."""
    if kind not in TOKENIZER_KINDS:
        raise ModelError(
            f"unknown tokenizer kind {kind!r}; use one of {', '.join(TOKENIZER_KINDS)}"
        )
    if kind == "legacy":
        split = pre_tokenizers.Split(Regex(_QWEN_SPLIT), behavior="isolated")
        return _train(split, _legacy_corpus(seed=seed), vocab_size or LEGACY_VOCAB, max_len=None)
    if not corpus:
        raise ModelError(
            "the protocol tokenizer trains on the protocol's text: pass "
            "corpus=paravt.data.synth.corpus.protocol_corpus() (the callers of build_tiny do)"
        )
    split = pre_tokenizers.Split(Regex(_PROTOCOL_SPLIT), behavior="isolated")
    return _train(split, corpus, vocab_size or PROTOCOL_VOCAB, max_len=24)


def _train(
    split: pre_tokenizers.PreTokenizer,
    corpus: Sequence[str],
    vocab_size: int,
    *,
    max_len: int | None,
) -> PreTrainedTokenizerFast:
    """Train the byte-level BPE on ``corpus`` and wrap it with Qwen's special tokens and the
    protocol tags as single (non-special, so they survive decoding) tokens."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [split, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        show_progress=False,
        max_token_length=max_len,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=list(QWEN_SPECIAL_TOKENS),
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        clean_up_tokenization_spaces=False,
        model_max_length=32768,
    )
    fast.add_special_tokens({"additional_special_tokens": list(QWEN_SPECIAL_TOKENS)})
    fast.add_tokens(list(PROTOCOL_TAGS), special_tokens=False)
    fast.chat_template = QWEN_CHAT_TEMPLATE
    return fast


# A Qwen-style template: no default system message; a `tool` message becomes a user turn wrapped in
# <tool_response>; content is a string or a list of {"type": "text"|"video"|"image"} parts. Video
# parts render as `video_marker` (Qwen2.5-VL: vision_start + video_pad + vision_end; Qwen3-VL:
# a bare video_pad, which its processor expands into per-frame "<t seconds>" + vision spans).
_TEMPLATE = (
    "{%- macro render(content) -%}"
    "{%- if content is string -%}{{- content -}}"
    "{%- else -%}{%- for part in content -%}"
    "{%- if part.type == 'text' -%}{{- part.text -}}"
    "{%- elif part.type == 'video' -%}{{- '@VIDEO@' -}}"
    "{%- elif part.type == 'image' -%}{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- endif -%}{%- endfor -%}{%- endif -%}"
    "{%- endmacro -%}"
    "{%- for message in messages -%}"
    "{%- if message.role == 'tool' -%}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + render(message.content) + "
    "'\\n</tool_response><|im_end|>\\n' -}}"
    "{%- else -%}"
    "{{- '<|im_start|>' + message.role + '\\n' + render(message.content) + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

VIDEO_MARKERS: dict[str, str] = {
    "qwen2_5_vl": "<|vision_start|><|video_pad|><|vision_end|>",
    "qwen3_vl": "<|video_pad|>",
}
IMAGE_MARKER = "<|vision_start|><|image_pad|><|vision_end|>"


def chat_template(family: str) -> str:
    return _TEMPLATE.replace("@VIDEO@", VIDEO_MARKERS[family])


QWEN_CHAT_TEMPLATE = chat_template("qwen2_5_vl")
