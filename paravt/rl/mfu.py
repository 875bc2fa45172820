"""Model FLOPs utilisation against the machine's MEASURED limit, not a datasheet peak.

The FLOP model (`Flops`, also `benchmarks/limits.py`'s): 2 · (text matmul params, lm_head
included, embedding lookup not) per token + causal attention 2 · T² · (heads · head_dim) per layer
and sequence; a training pass is 3 × its forward (forward + backward). Vision-tower FLOPs are not
counted here (the trainer's sequences carry their patch counts only inside the processor's
tensors), so the figure is a lower bound for video rows.

The limit (`measured_limit`): the rate this device reaches on the model's own matmul shapes (one
layer's q/k/v/o and MLP linears + the lm_head, `torch.nn.functional.linear`) in the model's dtype,
measured once per process at a token count capped so that one pass costs at most
``_BUDGET_FLOPS`` (a CPU run pays well under a second). ``perf/mfu/actor`` = the update's FLOPs /
its seconds / that limit, and the limit itself is logged as ``perf/mfu_limit_flops``: a reader sees
what the fraction is of."""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

_BUDGET_FLOPS = {"cpu": 2e10, "cuda": 2e13}  # one measured pass over every shape, at most
_MAX_TOKENS, _MIN_TOKENS = 4096, 64


@dataclass(frozen=True)
class Shapes:
    hidden: int
    inter: int
    heads_dim: int  # heads × head_dim
    kv_dim: int  # kv heads × head_dim
    vocab: int
    layers: int

    @classmethod
    def of(cls, model: Any) -> Shapes | None:
        """The text model's shapes from its config (``text_config`` of a VL model), else None."""
        c: Any = getattr(model, "config", None)
        t: Any = getattr(c, "text_config", c)
        try:
            hd = int(getattr(t, "head_dim", None) or t.hidden_size // t.num_attention_heads)
            return cls(
                int(t.hidden_size),
                int(t.intermediate_size),
                hd * int(t.num_attention_heads),
                hd * int(t.num_key_value_heads),
                int(t.vocab_size),
                int(t.num_hidden_layers),
            )
        except (AttributeError, TypeError, ZeroDivisionError):
            return None

    def linears(self) -> dict[str, tuple[int, int]]:
        """(in, out) of one layer's linears and the lm_head."""
        h = self.hidden
        return {
            "q": (h, self.heads_dim),
            "k": (h, self.kv_dim),
            "v": (h, self.kv_dim),
            "o": (self.heads_dim, h),
            "gate": (h, self.inter),
            "up": (h, self.inter),
            "down": (self.inter, h),
            "lm_head": (h, self.vocab),
        }


@dataclass(frozen=True)
class Flops:
    """Forward FLOPs of a text model (module docstring)."""

    per_token: float  # 2 × text matmul params (lm_head included)
    attn_per_t2: float  # causal attention: 2 × heads × head_dim × layers per T²
    per_patch: float = 0.0  # 2 × vision params (the benchmark counts patches; the trainer does not)

    @classmethod
    def of_shapes(cls, s: Shapes, vision_params: int = 0) -> Flops:
        per_layer = s.hidden * (s.heads_dim + s.kv_dim) * 2 + 3 * s.hidden * s.inter
        matmul = s.layers * per_layer + s.hidden * s.vocab
        return cls(2.0 * matmul, 2.0 * s.heads_dim * s.layers, 2.0 * vision_params)

    def forward(self, seq_lens: Sequence[int], patches: int = 0) -> float:
        return (
            sum(self.per_token * n + self.attn_per_t2 * n * n for n in seq_lens)
            + self.per_patch * patches
        )

    def train(self, seq_lens: Sequence[int], passes: int = 1) -> float:
        """Forward + backward (3 × the forward) of ``seq_lens``, ``passes`` times."""
        return 3.0 * passes * self.forward(seq_lens)


def matmul_limit(
    s: Shapes,
    tokens: int,
    repeats: int,
    *,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> tuple[float, dict[str, float]]:
    """Achievable FLOP/s of the shapes' linears at ``tokens`` rows, and the rate of each (the
    median of ``repeats`` timed calls after a warm-up; CUDA synchronised around each)."""
    dev = torch.device(device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    rates, total_f, total_t = {}, 0.0, 0.0
    for name, (k, n) in s.linears().items():
        x = torch.randn(tokens, k, device=dev, dtype=dtype)
        w = torch.randn(n, k, device=dev, dtype=dtype)
        torch.nn.functional.linear(x, w)  # warm-up
        times = []
        for _ in range(repeats):
            sync()
            t0 = time.perf_counter()
            torch.nn.functional.linear(x, w)
            sync()
            times.append(time.perf_counter() - t0)
        t, f = max(statistics.median(times), 1e-9), 2.0 * tokens * k * n
        rates[name], total_f, total_t = f / t, total_f + f, total_t + t
    return total_f / total_t, rates


@functools.lru_cache(maxsize=8)
def measured_limit(s: Shapes, device: str, dtype: torch.dtype) -> float:
    """`matmul_limit` once per process for these shapes, device and dtype, at the most tokens
    (≤ 4096) whose pass fits the device kind's FLOP budget."""
    per_token = 2.0 * sum(k * n for k, n in s.linears().values())
    budget = _BUDGET_FLOPS.get(torch.device(device).type, _BUDGET_FLOPS["cpu"])
    tokens = int(max(_MIN_TOKENS, min(_MAX_TOKENS, budget // per_token)))
    with torch.no_grad():
        limit, _ = matmul_limit(s, tokens, 3, device=device, dtype=dtype)
    return limit


class Mfu:
    """The MFU of a model's training passes: ``of(model)`` once, before the first step (the limit
    is measured then, outside any step's time), ``metrics(...)`` per step (empty when the model's
    shapes are unknown or nothing was timed)."""

    def __init__(self, shapes: Shapes | None, limit: float = 0.0) -> None:
        self.shapes, self.flops = shapes, None if shapes is None else Flops.of_shapes(shapes)
        self.limit = limit

    @classmethod
    def of(cls, model: Any) -> Mfu:
        try:
            p = next(iter(model.parameters()))
        except (AttributeError, StopIteration, TypeError):
            return cls(None)
        dtype = p.dtype if p.dtype.is_floating_point else torch.float32
        shapes = Shapes.of(model)
        if shapes is None:
            return cls(None)
        return cls(shapes, limit=measured_limit(shapes, str(p.device), dtype))

    def metrics(
        self, key: str, seq_lens: Sequence[int], seconds: float, passes: int = 1
    ) -> dict[str, float]:
        """``{key: achieved / limit, "perf/mfu_limit_flops": limit}`` of ``passes`` training
        passes over ``seq_lens`` in ``seconds``."""
        if self.flops is None or self.limit <= 0 or seconds <= 0 or not seq_lens:
            return {}
        rate = self.flops.train(seq_lens, passes) / seconds
        return {key: rate / self.limit, "perf/mfu_limit_flops": self.limit}
