"""nFrames Gating [paper, docs/ARCHITECTURE.md §5]: the overview frame budget n of one prompt in one
epoch.

n ~ Uniform(choices), drawn from an RNG seeded by a stable hash (BLAKE2b) of
(seed, epoch, prompt id). Consequences:

- every one of the G rollouts of a prompt gets the same n (same key → same draw);
- a new epoch reshuffles the budgets (the epoch is part of the key);
- the value is the same in every process and on every machine: Python's built-in ``hash`` is
  salted per process (PYTHONHASHSEED) and is never used;
- n is a frame COUNT and overrides any fps setting: callers pass it as ``nframes`` and drop fps.

`overview_budget` is the ONE gating branch of both engines (the local trainer, `paravt.rl.grpo`,
and verl's agent loop, `paravt.integrations.verl.agent_loop`): gated n when ``rl.gating.enabled``,
else the overview budget ``video.overview_nframes``.

What is not covered: stratification (each epoch draws independently per prompt, so the share of
each n in one epoch is only approximately 1/len(choices)).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paravt.config.choices import frame_budgets_problem
from paravt.errors import ConfigError

if TYPE_CHECKING:
    from paravt.config import TrainConfig

_PERSON = b"paravt-gating"  # BLAKE2b personalisation: keys of other modules never collide


def _check_choices(choices: Sequence[int]) -> None:
    """The config's own rule (`frame_budgets_problem`), for callers that bypass the config."""
    if problem := frame_budgets_problem(list(choices)):
        raise ConfigError(f"rl.gating.choices: {problem}")


def gating_key(seed: int, epoch: int, prompt_id: str) -> int:
    """128-bit integer key of (seed, epoch, prompt id), stable across processes and machines.

    JSON encoding of the triple keeps the fields unambiguous ("1","23" never equals "12","3").
    """
    payload = json.dumps([int(seed), int(epoch), str(prompt_id)]).encode("utf-8")
    digest = hashlib.blake2b(payload, digest_size=16, person=_PERSON).digest()
    return int.from_bytes(digest, "big")


def gated_nframes(seed: int, epoch: int, prompt_id: str, choices: Sequence[int]) -> int:
    """Overview frame count of ``prompt_id`` in ``epoch``: uniform over ``choices``.

    ``random.Random`` seeded with an int is deterministic across processes (its int seeding does
    not involve ``hash``), and ``randrange`` draws exactly uniformly (no modulo bias).
    """
    _check_choices(choices)
    rng = random.Random(gating_key(seed, epoch, prompt_id))
    return int(choices[rng.randrange(len(choices))])


def overview_budget(cfg: TrainConfig, epoch: int, prompt_id: str) -> int:
    """The overview frame budget of ``prompt_id`` in ``epoch`` under ``cfg``: `gated_nframes` over
    ``rl.gating.choices`` (seed ``rl.seed``) when ``rl.gating.enabled``, else
    ``video.overview_nframes``. Both engines call this, so they cannot drift apart."""
    g = cfg.rl.gating
    if g.enabled:
        return gated_nframes(cfg.rl.seed, epoch, prompt_id, g.choices)
    return cfg.video.overview_nframes
