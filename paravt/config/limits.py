"""How large one training step may be on this machine: the sizes a step multiplies into objects held
at once (rollouts, batch rows) are checked against the machine's memory when the config loads,
before any work (issue 34: ``rl.group_size=1000000000`` grew to 24 GB and was OOM-killed;
``rl.prompts_per_step=100000000`` ended in a MemoryError).

The bound is a floor, not a promise: each rollout or batch row is counted at ``ITEM_FLOOR_BYTES``,
an eighth of the least a rollout was measured to add (about 2 MiB of resident memory per rollout on
the xs tiny model with 16 overview frames of 64×64 pixels and 24-token turns: 32 → 128 rollouts of
one GRPO step, 1,206 → 1,404 MiB peak RSS). A step over the bound cannot fit; a step under it may
still not fit a large model (docs/reliability.md).
"""

from __future__ import annotations

import math
import os
from typing import Annotated, Any

from pydantic import Field

#: The most optimisation steps (or epochs) a run may ask for: 10 million is weeks of the fastest
#: step; past it a value is a typo (``rl.steps=1e20`` used to be accepted and run "forever").
MAX_STEPS = 10_000_000
_Steps = Annotated[int, Field(le=MAX_STEPS)]

#: Bytes counted for each rollout or batch row a step holds at once (the floor above).
ITEM_FLOOR_BYTES = 256 << 10


def machine_memory_bytes() -> int | None:
    """Physical memory of this machine (None where the platform does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def step_size_problem(what: str, items: float, fix: str, memory: int | None = None) -> str | None:
    """Why ``items`` objects held at once (``what``: the fields that multiply into them, with their
    values) cannot fit ``memory`` bytes (default: this machine's), naming the bound; None when they
    can or the memory is unknown."""
    memory = machine_memory_bytes() if memory is None else memory
    if not memory:
        return None
    bound = memory // ITEM_FLOOR_BYTES
    if items <= bound:
        return None
    count = f"{items:,.0f}" if items < 1e15 else f"{items:.3g}"
    return (
        f"{what} = {count} in one step, over the bound of {bound:,}: this machine's "
        f"{memory / 2**30:.0f} GiB "
        f"of memory at {ITEM_FLOOR_BYTES >> 10} KiB each at least (paravt/config/limits.py); {fix}"
    )


def step_size_problems(c: Any, memory: int | None = None) -> list[str]:
    """The sizes of ``c`` (a ``TrainConfig``; typed Any, this module sits below the sections) whose
    step cannot fit ``memory`` (default: this machine's): the rollouts of an RL step, the rows of
    an SFT or prior batch."""
    rl = c.rl
    prompts = rl.oversample * rl.prompts_per_step
    rollouts = rl.group_size * (math.ceil(prompts) if math.isfinite(prompts) else prompts)
    what = (
        f"rl.group_size={rl.group_size} × ceil(rl.oversample={rl.oversample:g} × "
        f"rl.prompts_per_step={rl.prompts_per_step}) rollouts"
    )
    checks = [(what, rollouts, "lower rl.group_size or rl.prompts_per_step")]
    checks += [
        (f"{name}.batch_size={s.batch_size} rows", s.batch_size, f"lower {name}.batch_size")
        for name, s in (("sft", c.sft), ("prior", c.prior))
    ]
    return [p for what, items, fix in checks if (p := step_size_problem(what, items, fix, memory))]
