"""Every config field explains itself: ``paravt config show`` prints each field's ``description``,
so a field without one is a knob nobody can read about. Walks every pydantic model of
``paravt.config`` (sections nested in others included, inherited fields included)."""

from __future__ import annotations

import inspect

from pydantic import BaseModel

import paravt.config as config


def _models() -> list[type[BaseModel]]:
    """Every model reachable from the package's exports, nested sections included."""
    todo = [
        obj for _, obj in inspect.getmembers(config, inspect.isclass) if issubclass(obj, BaseModel)
    ]
    seen: list[type[BaseModel]] = []
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.append(model)
        for field in model.model_fields.values():
            ann = field.annotation
            if inspect.isclass(ann) and issubclass(ann, BaseModel):
                todo.append(ann)
    return seen


def test_the_walk_reaches_every_section() -> None:
    names = {m.__name__ for m in _models()}
    assert {
        "TrainConfig",
        "GatingConfig",
        "SFTConfig",
        "PriorConfig",
        "DistillConfig",
        "ToolServerConfig",
    } <= names


def test_every_config_field_has_a_description() -> None:
    missing = [
        f"{m.__name__}.{name}"
        for m in _models()
        for name, f in m.model_fields.items()
        if len((f.description or "").strip()) < 12
    ]
    assert not missing, (
        f"config fields without a description (add description=... to the Field): {missing}"
    )


def test_sft_and_prior_share_one_definition_of_their_common_fields() -> None:
    """The supervised trainers' common fields are written once (a shared base), under the same YAML
    keys."""
    common = {
        "lr",
        "weight_decay",
        "adam_betas",
        "batch_size",
        "max_grad_norm",
        "warmup_steps",
        "seed",
        "save_every",
        "micro_batch_tokens",
        "loss_agg",
    }
    base = config.SFTConfig.__mro__[1]
    assert base is config.PriorConfig.__mro__[1] and set(base.model_fields) == common
    for section in (config.SFTConfig, config.PriorConfig):
        assert not common & set(section.__annotations__), (
            f"{section.__name__} redefines a shared field"
        )
    yaml_keys = config.TrainConfig().model_dump()
    assert common <= set(yaml_keys["sft"]) and common <= set(yaml_keys["prior"])
