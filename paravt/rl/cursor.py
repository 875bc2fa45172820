"""Which prompts a PARA-GRPO step takes (``paravt.rl.grpo``): how many it rolls out, and the data
cursor that draws them from a seeded per-epoch permutation (saved in checkpoints)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any


def rollout_prompts(rl: Any) -> int:
    """Prompts one step rolls out (``rl``: an ``RLConfig``): ``prompts_per_step`` (``rl.filter``
    offline, the paper's: every group is trained), ``ceil(oversample · prompts_per_step)`` online
    (the filters then keep ``prompts_per_step``)."""
    if rl.filter == "online":
        return math.ceil(rl.oversample * rl.prompts_per_step)
    return int(rl.prompts_per_step)


@dataclass
class DataCursor:
    """Where the trainer is in the prompt stream (saved in checkpoints)."""

    epoch: int = 0
    position: int = 0

    def take(self, n_rows: int, k: int, seed: int) -> list[tuple[int, int]]:
        """``k`` (row index, epoch) pairs; a new seeded permutation each epoch."""
        out = []
        for _ in range(k):
            if self.position >= n_rows:
                self.epoch, self.position = self.epoch + 1, 0
            perm = _permutation(n_rows, seed, self.epoch)
            out.append((perm[self.position], self.epoch))
            self.position += 1
        return out


def _permutation(n: int, seed: int, epoch: int) -> list[int]:
    rng = random.Random(f"perm:{seed}:{epoch}")
    idx = list(range(n))
    rng.shuffle(idx)
    return idx


__all__ = ["DataCursor", "rollout_prompts"]
