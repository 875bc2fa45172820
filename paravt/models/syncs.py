"""Count device→host synchronisations of a block of torch code, on any device (a CPU included).

On an accelerator, a training step or a decode step runs at the device's speed only while the host
never waits for it: every ``.item()`` (``float(t)``, ``int(t)``, ``bool(t)``), ``.tolist()``,
``.cpu()`` / ``.numpy()`` / ``.to("cpu")``, ``nonzero`` and every op whose OUTPUT SHAPE depends on
tensor values (boolean indexing, ``masked_select``, ``unique``, ``repeat_interleave`` by a tensor)
makes the host wait for everything queued before it. On a CPU these cost nothing, so they go
unnoticed; this counter sees them anyway, by the op, through a torch function mode (the tensor
methods) and a dispatch mode (the aten ops under them), so the count measured on a CPU is the one
a GPU would pay.

``device``: count only ops on tensors of that device type (``"cuda"``: the exact count of a GPU
run); ``None`` counts ops on tensors of any device, an upper bound on a CPU run (a host tensor's
``.tolist()`` is counted although on a GPU it would cost nothing): measure the region that runs on
the device (the forward, backward and optimizer step), not the host-side row building. A site is
``kind file:line`` of the innermost code outside torch (``depth`` callers after it); an op of a
backward pass names its autograd node first (``item [MaskedScatterBackward0] ...``).

    with SyncCounter() as syncs:
        trainer.step(s)
    syncs.total, syncs.by_kind, syncs.sites.most_common(5)
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from types import FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["SyncCounter"]

_aten = torch.ops.aten
_SCALAR = {_aten._local_scalar_dense.default}  # .item(), float(t), int(t), bool(t)
_SHAPE = {  # output shape read from the data
    _aten.nonzero.default,
    _aten.masked_select.default,
    _aten._unique2.default,
    _aten.unique_dim.default,
    _aten.unique_consecutive.default,
    _aten.repeat_interleave.Tensor,
}
_INDEX = {_aten.index.Tensor, _aten.index_put.default, _aten.index_put_.default}
_HOST = {"tolist": "tolist", "numpy": "host_copy", "cpu": "host_copy"}


def _tensors(args: Iterable[Any]) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(x for x in a if isinstance(x, torch.Tensor))
    return out


def _site(depth: int) -> str:
    """``file:line`` of the ``depth`` innermost frames outside torch and this module (where the
    sync is, and its callers), innermost first."""
    f: FrameType | None = sys._getframe(2)
    out: list[str] = []
    while f is not None and len(out) < depth:
        name = f.f_code.co_filename
        if "/torch/" not in name and name != __file__:
            out.append(f"{'/'.join(name.rsplit('/', 2)[-2:])}:{f.f_lineno}")
        f = f.f_back
    return " < ".join(out) or "?"


class _Dispatch(TorchDispatchMode):
    def __init__(self, note: Callable[[str, list[torch.Tensor]], None]) -> None:
        super().__init__()
        self.note = note

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        if func in _SCALAR:
            self.note("item", _tensors(args))
        elif func in _SHAPE and not (
            func is _aten.repeat_interleave.Tensor and kwargs.get("output_size") is not None
        ):
            self.note("data_shape", _tensors(args))
        elif func in _INDEX:
            masks = [
                t for t in _tensors(args[1:2]) if t.dtype in (torch.bool, torch.uint8)
            ]  # a boolean index is a nonzero
            if masks:
                self.note("data_shape", masks)
        return func(*args, **kwargs)


class _Function(TorchFunctionMode):
    def __init__(self, note: Callable[[str, list[torch.Tensor]], None]) -> None:
        super().__init__()
        self.note = note

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in _HOST and args and isinstance(args[0], torch.Tensor):
            self.note(_HOST[name], [args[0]])
        elif name == "to" and args and isinstance(args[0], torch.Tensor) and _to_host(args, kwargs):
            self.note("host_copy", [args[0]])
        return func(*args, **kwargs)


def _to_host(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """``t.to("cpu")`` spelled out: a ``torch.device`` argument is the code's own device, which
    is the CPU in a CPU run and costs no sync on a GPU (``t.to(model_device)``)."""
    dev = kwargs.get("device", args[1] if len(args) > 1 else None)
    return isinstance(dev, str) and dev.split(":")[0] == "cpu"


def _host_by_design() -> bool:
    """An optimizer's step counter: a host tensor on every device unless ``capturable``, so its
    ``.item()`` (``torch.optim.optimizer._get_value``) never waits for the device."""
    f: FrameType | None = sys._getframe(3)
    while f is not None:
        if f.f_code.co_name == "_get_value" and "/torch/optim/" in f.f_code.co_filename:
            return True
        f = f.f_back
    return False


class SyncCounter:
    """Context manager: the syncs of the ops run inside it (module docstring)."""

    def __init__(self, device: str | None = None, depth: int = 1) -> None:
        self.device, self.depth = device, depth
        self.by_kind: Counter[str] = Counter()
        self.sites: Counter[str] = Counter()
        self._modes: list[Any] = []

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def _note(self, kind: str, tensors: list[torch.Tensor]) -> None:
        if self.device is not None and not any(t.device.type == self.device for t in tensors):
            return
        if kind == "item" and _host_by_design():
            return
        self.by_kind[kind] += 1
        node = torch._C._current_autograd_node()  # set while the autograd engine runs a backward
        where = f"[{type(node).__name__}] " if node is not None else ""
        self.sites[f"{kind} {where}{_site(self.depth)}"] += 1

    def __enter__(self) -> SyncCounter:
        self._modes = [_Function(self._note), _Dispatch(self._note)]
        for m in self._modes:
            m.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        for m in reversed(self._modes):
            m.__exit__(*exc)
        self._modes = []

    def to_json(self, per: int = 1, top: int = 12) -> dict[str, Any]:
        """Counts divided by ``per`` (steps), with the ``top`` call sites."""
        return {
            "total": self.total / per,
            "by_kind": {k: v / per for k, v in sorted(self.by_kind.items())},
            "sites": {k: v / per for k, v in self.sites.most_common(top)},
        }
