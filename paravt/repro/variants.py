"""The variant table of `paravt repro`, in ONE place: each variant is a dict of dotted config
overrides on the run's base ``TrainConfig`` plus which simulated prior its base model carries.

Every RL variant sets all four PARA-GRPO switches explicitly, as the authors' release does in its
recipes (vanilla_grpo_8b.yaml / paragrpo_8b.yaml): the think prefix, the answer-suffix format
weights, the anchor reward and nFrames Gating; so a change of a config default never changes what
a variant means. Without gating a prompt gets ``video.overview_nframes`` (64, the release's
``hierarchical_agent.nframes``): the budget is never pinned per variant (docs/fidelity.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from paravt.config import TrainConfig, apply_override, validate
from paravt.errors import ConfigError

#: Exploration Anchoring's switches [authors: paravt.constrained.{think_prefix, answer_suffix},
#: anchoring.weight]: all off for vanilla GRPO, all on for PARA-GRPO.
_NO_ANCHORING = {
    "reward.anchor": False,
    "rollout.think_prefix": False,
    "reward.answer_suffix": False,
}
_ANCHORING = {"reward.anchor": True, "rollout.think_prefix": True, "reward.answer_suffix": True}
_VANILLA = {**_NO_ANCHORING, "rl.gating.enabled": False}
_PARA = {**_ANCHORING, "rl.gating.enabled": True}


@dataclass(frozen=True)
class Variant:
    name: str
    prior: Literal[
        "strong", "weak"
    ]  # the simulated tool prior of its base model (prior.tool_mix > 0 or 0)
    rl: bool  # False: the SFT cold start itself, evaluated without RL
    overrides: Mapping[str, Any] = field(default_factory=dict)
    full_grid: bool = (
        False  # evaluated on every n × every mode (Block C), not only parallel at n = 4, 64
    )


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("sft", "strong", rl=False, full_grid=True),
        Variant("vanilla_grpo", "strong", rl=True, overrides=_VANILLA, full_grid=True),
        Variant(
            "anchoring_only",
            "strong",
            rl=True,
            overrides={**_ANCHORING, "rl.gating.enabled": False},
        ),
        Variant(
            "gating_only", "strong", rl=True, overrides={**_NO_ANCHORING, "rl.gating.enabled": True}
        ),
        Variant("paragrpo", "strong", rl=True, overrides=_PARA, full_grid=True),
        Variant(
            "paragrpo_no_rtool", "strong", rl=True, overrides={**_PARA, "reward.tool_mode": "off"}
        ),
        Variant("paragrpo_no_gamma", "strong", rl=True, overrides={**_PARA, "reward.gamma": 0.0}),
        Variant("weak_prior_vanilla", "weak", rl=True, overrides=_VANILLA),
        Variant("weak_prior_paragrpo", "weak", rl=True, overrides=_PARA),
    )
}


def with_overrides(cfg: TrainConfig, overrides: Mapping[str, Any]) -> TrainConfig:
    """A validated copy of ``cfg`` with ``{"a.b": value}`` overrides applied."""
    data = cfg.model_dump(mode="json")
    for key, value in overrides.items():
        apply_override(data, f"{key}={_yaml(value)}")
    return validate(TrainConfig, data, "repro variant overrides")


def _yaml(value: Any) -> str:
    import yaml

    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


def pick(names: str | None) -> list[Variant]:
    """The variants named in a comma list (all of them for None), in table order."""
    if not names:
        return list(VARIANTS.values())
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in VARIANTS]
    if unknown:
        raise ConfigError(f"unknown variant(s) {unknown}; choose from {', '.join(VARIANTS)}")
    return [v for v in VARIANTS.values() if v.name in wanted]
