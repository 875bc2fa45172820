"""Load a policy (model + processor) from a local HF directory or a cached hub id, offline.

One code path for the tiny checkpoints and for real ones such as ``Qwen/Qwen3-VL-8B-Instruct``
(``local_files_only=True``: nothing is downloaded here). A model that loads with SDPA attention
is switched to ``paravt_sdpa`` (``paravt.models.hf.decode_mask``: the same attention, a cheaper
mask for padded one-token decode steps). On CUDA, ``accelerator_attention`` turns off PyTorch's
cuDNN SDPA backend for the process (why: its docstring).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from paravt.errors import ModelError
from paravt.models.hf.decode_mask import use_decode_mask

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
_FAMILIES = {"qwen2_5_vl": "qwen2_5_vl", "qwen3_vl": "qwen3_vl"}


@dataclass(frozen=True, eq=False)
class LoadedPolicy:
    model: Any  # a transformers *ForConditionalGeneration in eval mode
    processor: Any  # Qwen2_5_VLProcessor | Qwen3VLProcessor
    tokenizer: Any  # the processor's tokenizer
    family: str  # "qwen2_5_vl" | "qwen3_vl"
    path: str = ""


def family_of(model_type: str) -> str:
    """Map a config ``model_type`` to a paravt family (``ModelError`` for unsupported ones)."""
    if model_type not in _FAMILIES:
        raise ModelError(
            f"model_type {model_type!r} is not supported; paravt handles {', '.join(_FAMILIES)} "
            "(Qwen2.5-VL / Qwen3-VL checkpoints)"
        )
    return _FAMILIES[model_type]


def load_processor(path: str) -> Any:
    from transformers import AutoProcessor

    try:
        return AutoProcessor.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as err:
        raise ModelError(
            f"cannot load a processor from {path!r}: {err}. Pass a local checkpoint directory "
            "(e.g. "
            "one written by `paravt model tiny`) or a hub id already in the local HF cache"
        ) from None


def accelerator_attention(device: str | torch.device) -> None:
    """On a CUDA device, turn PyTorch's cuDNN SDPA backend off, process-wide; nothing elsewhere.

    Measured on an H200 (torch 2.11, bf16, tiny qwen3_vl-s, docs/performance-log.md "On a GPU"):
    SDPA with a mask went to cuDNN, which builds an execution plan for every new (batch, query, key)
    shape, and a decode step's key length grows by one each step: 224 attention calls took 2.54 s
    of host time in a 2.96 s K = 4 sub-agent turn (11 ms each). Without it the flash / efficient /
    math kernels serve the same calls with no plan and the turn took 0.33 s; a training pass's
    padded batch lengths change every step too, so the same holds there."""
    if torch.device(device).type == "cuda":
        torch.backends.cuda.enable_cudnn_sdp(False)


def load_policy(path: str, *, device: str = "cpu", dtype: str = "float32") -> LoadedPolicy:
    """Load model + processor from ``path`` (local dir or cached hub id) onto ``device``."""
    from transformers import AutoConfig, AutoModelForImageTextToText

    if dtype not in _DTYPES:
        raise ModelError(f"dtype {dtype!r} is not supported; use one of {', '.join(_DTYPES)}")
    try:
        config = AutoConfig.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as err:
        raise ModelError(
            f"cannot load a model config from {path!r}: {err}. Build one with `paravt model tiny "
            "--out DIR` or download the checkpoint into the HF cache first"
        ) from None
    family = family_of(config.model_type)
    processor = load_processor(path)
    model = AutoModelForImageTextToText.from_pretrained(
        path, local_files_only=True, dtype=_DTYPES[dtype]
    )
    accelerator_attention(device)
    model.to(device).eval()
    use_decode_mask(model)  # a one-op mask for padded decode steps; bit-identical (decode_mask)
    return LoadedPolicy(
        model=model,
        processor=processor,
        tokenizer=processor.tokenizer,
        family=family,
        path=str(path),
    )
