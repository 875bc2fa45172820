"""3-D M-RoPE position ids of training rows: computed once per row on the CPU, passed to every pass.

Qwen2.5-VL and Qwen3-VL compute the rope index (``get_rope_index``: text positions run on, a media
item's tokens get (t, h, w) positions) inside EVERY forward that is given no ``position_ids``: row
by row in Python, with a ``.item()`` per grid (a device sync on a GPU) and a few ``arange``s. A
training row is forwarded many times (each SFT epoch; the GRPO update's policy passes and its
reference pass), so here each row's index is computed once, on the CPU, by the model's own
``get_rope_index`` (one formula), kept for the row's lifetime (a weak reference: a row that is
freed leaves), and every micro-batch passes it as ``position_ids`` (3×B×L), as verl's datasets do.
``warm`` computes it when the rows are built (the trainers' data sets), while the row's processor
output is still in ``paravt.models.features``.

Exactness: a row's positions depend only on its own ids and grids, so the row computed alone equals
the row inside a padded batch. Right pads continue the last position (as ``get_rope_index`` numbers
a padded row's trailing text; causal attention keeps them from every real token anyway). A
micro-batch without any media gets no ``position_ids`` (the model's own 1-D default, as before).
tests/rl/test_rope.py checks logits and losses against the model computing them itself.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from paravt.agent.trajectory import Trajectory
from paravt.models.media import model_inputs

_GRIDS = ("image_grid_thw", "video_grid_thw", "second_per_grid_ts")
_CACHE: weakref.WeakKeyDictionary[Trajectory, torch.Tensor] = weakref.WeakKeyDictionary()


def _has_media(traj: Trajectory) -> bool:
    return bool(traj.videos or traj.images)


def _compute(
    model: Any, ids: torch.Tensor, mm: torch.Tensor, grids: Mapping[str, torch.Tensor]
) -> torch.Tensor:
    """(3, L) positions of one row from its ids (1×L), token types (1×L) and media grids."""
    with torch.no_grad():
        pos, _ = model.model.get_rope_index(
            ids.cpu(), mm_token_type_ids=mm.cpu(), **{k: v.cpu() for k, v in grids.items()}
        )  # 3×1×L
    return pos[:, 0].to(torch.int32)  # 3×L (int32: half the memory; positions stay far below 2³¹)


def row_positions(
    model: Any, processor: Any, traj: Trajectory, grids: Mapping[str, torch.Tensor] | None = None
) -> torch.Tensor | None:
    """The row's (3, L) positions, None for a row without media; computed once per row. ``grids``:
    the row's media grids when the caller has them (else they come from the processor)."""
    if not _has_media(traj):
        return None
    hit = _CACHE.get(traj)
    if hit is None:
        if grids is None:
            inputs = model_inputs(processor, traj.ids, traj.videos, traj.images, device="cpu")
            grids = {k: inputs[k] for k in _GRIDS if k in inputs}
        ids = torch.tensor([list(traj.ids)], dtype=torch.long)  # 1×L
        mm = torch.zeros_like(ids)  # 1×L
        mm[ids == processor.image_token_id] = 1
        mm[ids == processor.video_token_id] = 2
        hit = _CACHE[traj] = _compute(model, ids, mm, grids)
    return hit


def warm(model: Any, processor: Any, trajs: Sequence[Trajectory]) -> None:
    """Compute the positions of every row now (the trainers call it as their rows are built)."""
    for t in trajs:
        row_positions(model, processor, t)


def row_grids(
    feats: Mapping[str, torch.Tensor], trajs: Sequence[Trajectory]
) -> list[dict[str, torch.Tensor]]:
    """Each row's slice of a batch's concatenated media grids (``media.batch_inputs`` order)."""
    out: list[dict[str, torch.Tensor]] = []
    v0 = i0 = 0
    for t in trajs:
        nv, ni = len(t.videos), len(t.images)
        g: dict[str, torch.Tensor] = {}
        if nv:
            g["video_grid_thw"] = feats["video_grid_thw"][v0 : v0 + nv]
            if "second_per_grid_ts" in feats:
                g["second_per_grid_ts"] = feats["second_per_grid_ts"][v0 : v0 + nv]
        if ni:
            g["image_grid_thw"] = feats["image_grid_thw"][i0 : i0 + ni]
        out.append(g)
        v0, i0 = v0 + nv, i0 + ni
    return out


def batch_positions(
    model: Any,
    processor: Any,
    trajs: Sequence[Trajectory],
    width: int,
    feats: Mapping[str, torch.Tensor],
) -> torch.Tensor | None:
    """(3, B, width) positions of right-padded rows (pads continue each row's last position), or
    None when no row has media."""
    if not any(_has_media(t) for t in trajs):
        return None
    out = torch.empty((3, len(trajs), width), dtype=torch.long)  # 3×B×L
    for b, (t, grids) in enumerate(zip(trajs, row_grids(feats, trajs), strict=True)):
        pos = row_positions(model, processor, t, grids)
        if pos is None:  # a text row: 0 … L−1 on all three axes
            pos = torch.arange(len(t.ids), dtype=torch.int32).expand(3, -1)
        n = pos.shape[1]
        out[:, b, :n] = pos
        if n < width:
            out[:, b, n:] = pos[:, -1:].long() + torch.arange(1, width - n + 1)  # right pads run on
    return out
