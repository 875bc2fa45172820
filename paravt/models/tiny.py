"""Randomly initialised tiny Qwen2.5-VL / Qwen3-VL checkpoints, built fully offline.

``build_tiny(family, size, out_dir, corpus=…)`` writes a normal HF directory (config, weights,
tokenizer, processor, chat template) that ``AutoModelForImageTextToText`` / ``AutoProcessor``
load, so the whole pipeline runs on the CPU exactly as it would on a real checkpoint
(../shared/NOTES-ENV.md, outside the repository, "Tiny Qwen-VL models, offline", lists the
configuration pitfalls handled here). The tokenizer is the
protocol BPE (`paravt.models.tokenizer`, kind ``protocol``); ``tokenizer="legacy"`` builds the
≈ 530-token one of the first checkpoints, for comparisons. The tokenizer is saved with the model,
so a checkpoint always loads with the one it was trained with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from paravt.config import ModelFamily
from paravt.errors import ModelError
from paravt.models.tokenizer import chat_template, train_tokenizer

Family = ModelFamily
Size = Literal["xs", "s", "m"]
FAMILIES: tuple[str, ...] = ("qwen2_5_vl", "qwen3_vl")


#: Bump when a built tiny model changes for the same (family, size, seed): caches keyed by it
#: (`paravt.repro.bases`) build a new one. 2: the protocol tokenizer became the default.
TINY_VERSION = 2


@dataclass(frozen=True)
class TinySpec:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    vision_hidden: int
    vision_depth: int


SIZES: dict[str, TinySpec] = {
    "xs": TinySpec(hidden=64, layers=2, heads=4, kv_heads=2, vision_hidden=32, vision_depth=1),
    "s": TinySpec(hidden=128, layers=4, heads=4, kv_heads=2, vision_hidden=64, vision_depth=2),
    "m": TinySpec(hidden=256, layers=4, heads=8, kv_heads=4, vision_hidden=64, vision_depth=2),
}


@dataclass(frozen=True)
class TinyBuild:
    path: str
    family: str
    size: str
    num_params: int
    vocab_size: int
    tokenizer: str = "protocol"


def _mrope_section(head_dim: int) -> list[int]:
    half = head_dim // 2  # the three parts (t, h, w) must sum to head_dim / 2
    t = half - 2 * (3 * half // 8)
    return [t, 3 * half // 8, 3 * half // 8]


def _token_ids(tok) -> dict[str, int]:  # noqa: ANN001 - a PreTrainedTokenizerFast
    ids = {
        n: tok.convert_tokens_to_ids(t)
        for n, t in (
            ("image_token_id", "<|image_pad|>"),
            ("video_token_id", "<|video_pad|>"),
            ("vision_start_token_id", "<|vision_start|>"),
            ("vision_end_token_id", "<|vision_end|>"),
        )
    }
    return ids


def _text_kwargs(spec: TinySpec, vocab: int, tok) -> dict:  # noqa: ANN001
    head_dim = spec.hidden // spec.heads
    return dict(
        vocab_size=vocab,
        hidden_size=spec.hidden,
        intermediate_size=spec.hidden * 3,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.kv_heads,
        head_dim=head_dim,
        max_position_embeddings=32768,
        bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
    )


def _build_model(family: str, spec: TinySpec, tok) -> torch.nn.Module:  # noqa: ANN001
    vocab = len(tok)
    text = _text_kwargs(spec, vocab, tok)
    mrope = _mrope_section(text["head_dim"])
    vis: dict[str, Any] = dict(
        depth=spec.vision_depth,
        hidden_size=spec.vision_hidden,
        intermediate_size=spec.vision_hidden * 2,
        num_heads=2,
        out_hidden_size=spec.hidden,
    )
    if family == "qwen2_5_vl":
        from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

        text["rope_parameters"] = {
            "rope_type": "default",
            "rope_theta": 10000.0,
            "mrope_section": mrope,
        }
        vis.update(
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
            window_size=56,
            fullatt_block_indexes=[spec.vision_depth - 1],
        )
        cfg = Qwen2_5_VLConfig(text_config=text, vision_config=vis, **_token_ids(tok))
        return Qwen2_5_VLForConditionalGeneration(cfg)
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    text["rope_parameters"] = {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "mrope_section": mrope,
        "mrope_interleaved": True,
    }
    vis.update(
        patch_size=16,
        spatial_merge_size=2,
        temporal_patch_size=2,
        num_position_embeddings=64,
        deepstack_visual_indexes=[0],
    )
    cfg = Qwen3VLConfig(text_config=text, vision_config=vis, **_token_ids(tok))
    return Qwen3VLForConditionalGeneration(cfg)


def _build_processor(family: str, tok):  # noqa: ANN001, ANN202
    """Processor from parts. Frames reach it already resized by ``paravt.video`` (multiples of
    patch*merge), so the min/max pixel limits are set wide enough never to rescale them."""
    tok.chat_template = chat_template(family)
    if family == "qwen2_5_vl":
        from transformers import Qwen2_5_VLProcessor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor

        size = {"shortest_edge": 28 * 28, "longest_edge": 28 * 28 * 4096}
        return Qwen2_5_VLProcessor(
            image_processor=Qwen2VLImageProcessor(size=size),
            tokenizer=tok,
            video_processor=Qwen2VLVideoProcessor(size=size),
            chat_template=tok.chat_template,
        )
    from transformers import Qwen2VLImageProcessor, Qwen3VLProcessor, Qwen3VLVideoProcessor

    return Qwen3VLProcessor(
        image_processor=Qwen2VLImageProcessor(
            patch_size=16,
            merge_size=2,
            size={"shortest_edge": 32 * 32, "longest_edge": 32 * 32 * 4096},
        ),
        tokenizer=tok,
        video_processor=Qwen3VLVideoProcessor(
            size={"shortest_edge": 32 * 32 * 2, "longest_edge": 32 * 32 * 2 * 65536}
        ),
        chat_template=tok.chat_template,
    )


def build_tiny(
    family: str,
    size: str,
    out_dir: str | Path,
    *,
    corpus: Sequence[str] = (),
    seed: int = 0,
    tokenizer: str = "protocol",
) -> TinyBuild:
    """Build, save and describe a random tiny model of ``family`` at ``size`` (offline), its
    tokenizer of kind ``tokenizer`` (`paravt.models.tokenizer.TOKENIZER_KINDS`), the protocol one
    trained on ``corpus`` (the protocol's own text: `paravt.data.synth.corpus.protocol_corpus`)."""
    if family not in FAMILIES:
        raise ModelError(f"unknown model family {family!r}; use one of {', '.join(FAMILIES)}")
    if size not in SIZES:
        raise ModelError(f"unknown tiny size {size!r}; use one of {', '.join(SIZES)}")
    torch.manual_seed(seed)
    tok = train_tokenizer(tokenizer, corpus=corpus if tokenizer == "protocol" else (), seed=seed)
    model = _build_model(family, SIZES[size], tok)
    processor = _build_processor(family, tok)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.generation_config.eos_token_id = tok.convert_tokens_to_ids("<|im_end|>")
    model.generation_config.pad_token_id = tok.convert_tokens_to_ids("<|endoftext|>")
    model.save_pretrained(out)
    processor.save_pretrained(out)
    n_params = sum(p.numel() for p in model.parameters())
    return TinyBuild(
        path=str(out),
        family=family,
        size=size,
        num_params=n_params,
        vocab_size=len(tok),
        tokenizer=tokenizer,
    )
