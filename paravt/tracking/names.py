"""The step metrics renamed to verl's (and SFT's to verl's SFT trainer's) names: old → new.

A breaking rename, like ``time/*`` → ``timing_s/*`` before it; docs/tracking.md lists the same
pairs, and a test checks that no trainer logs an old name and that the doc lists every pair."""

from __future__ import annotations

#: RL (``paravt train rl``): verl's actor and critic names.
RL_RENAMED = {
    "loss": "actor/loss",
    "policy_loss": "actor/pg_loss",
    "kl": "actor/kl_loss",
    "clip_frac": "actor/pg_clipfrac",
    "entropy": "actor/entropy",
    "grad_norm": "actor/grad_norm",
    "lr": "actor/lr",
    "reward/mean": "critic/rewards/mean",
}

#: SFT and the base's prior training (``paravt train sft|prior``): verl's SFT trainer's names.
SFT_RENAMED = {
    "loss": "train/loss",
    "grad_norm": "train/grad_norm",
    "lr": "train/lr",
}
