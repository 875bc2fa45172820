"""A one-op attention mask for the one-token decode steps of a left-padded batch (issue 14).

transformers (5.10) rebuilds the 4-D attention mask from the 2-D padding mask on every forward
(``masking_utils.sdpa_mask``: aranges, a composed index function, an expand). For a decode step
(one query token at the last position, a plain causal model, no sliding window) the causal part
is all true, so the mask is the padding mask itself: ``attention_mask[:, None, None, :]``, or no
mask at all when nothing is padded. Measured on the xs model (hf backend, CPU, one thread), a
47-step decode of 4 left-padded rows took 48 ms against 41 ms for 4 unpadded rows, and the
batched sub-agent request of a K = 4 turn went from 69.0 ms to 63.4 ms with this mask
(docs/performance.md).

``register()`` installs it under the attention implementation name ``paravt_sdpa``: the SDPA
attention of transformers, this mask function in front of transformers' own ``sdpa_mask``.
``load_policy`` switches a model that loaded with ``sdpa`` to it. Every other call (a prefill,
a sliding window, a packed or custom mask, dynamo or ``torch.jit`` tracing; other tracers
such as fx are not detected, so trace with ``sdpa``) goes to ``sdpa_mask`` unchanged, and the
decode-step mask is the same boolean tensor ``sdpa_mask`` builds, so outputs are bit-identical
(``tests/models/test_decode_mask.py``). The name lives in the in-memory config only;
transformers does not write ``_attn_implementation`` into a saved ``config.json``.
"""

from __future__ import annotations

from typing import Any

import torch

NAME = "paravt_sdpa"


def decode_step_mask(
    batch_size: int,
    q_length: int,
    kv_length: int,
    q_offset: Any = 0,
    kv_offset: int = 0,
    attention_mask: torch.Tensor | None = None,
    **kwargs: Any,
) -> torch.Tensor | None:
    """``sdpa_mask``'s result; computed in one op for a decode step, by ``sdpa_mask`` otherwise.
    The rest of transformers' mask interface (``mask_function``, ``local_size``,
    ``allow_is_causal_skip``, …) arrives in ``kwargs`` and goes to ``sdpa_mask`` as it came."""
    from transformers.masking_utils import causal_mask_function, sdpa_mask

    mask_function = kwargs.pop("mask_function", None) or causal_mask_function
    tracing = torch.compiler.is_compiling() or torch.jit.is_tracing()
    decode_step = (
        not tracing
        and q_length == 1
        and kv_offset == 0
        and kwargs.get("local_size") is None
        and kwargs.get("allow_is_causal_skip", True)
        and mask_function is causal_mask_function
        and attention_mask is not None
        and attention_mask.dim() == 2
        and attention_mask.dtype == torch.bool
        and attention_mask.shape == (batch_size, kv_length)
        and int(q_offset) == kv_length - 1
    )
    if decode_step and attention_mask is not None:
        return None if bool(attention_mask.all()) else attention_mask[:, None, None, :]  # B×1×1×L
    return sdpa_mask(
        batch_size,
        q_length,
        kv_length,
        q_offset,
        kv_offset,
        mask_function=mask_function,
        attention_mask=attention_mask,
        **kwargs,
    )


def register() -> str:
    """Register ``paravt_sdpa`` with transformers (idempotent); returns the name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    if NAME not in ALL_ATTENTION_FUNCTIONS.valid_keys():
        AttentionInterface.register(NAME, ALL_ATTENTION_FUNCTIONS["sdpa"])
        ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, decode_step_mask)
    return NAME


def use_decode_mask(model: Any) -> bool:
    """Switch a model loaded with SDPA attention to ``paravt_sdpa``; False (unchanged) otherwise."""
    if getattr(model.config, "_attn_implementation", None) != "sdpa":
        return False
    model.set_attn_implementation(register())
    return model.config._attn_implementation == NAME
