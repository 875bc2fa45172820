"""Issue 34 item 1: a config never carries a value that cannot run. Every float of every section is
finite (inf, -inf and nan refused under the field's name), a mapping that writes a key twice is
refused with the key and both lines, and the sizes a step multiplies are bounded by the machine's
memory before any work (the error names the fields and the bound)."""

from __future__ import annotations

import math
import types
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from paravt.config import TrainConfig, load, parse_yaml, validate
from paravt.config.fields import _Strict
from paravt.config.limits import ITEM_FLOOR_BYTES, step_size_problems
from paravt.errors import ConfigError


def _sections(cls: type[BaseModel] = _Strict) -> list[type[BaseModel]]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_sections(sub)]
    return out


def _is_float(annotation: object) -> bool:
    args = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    return float in args


FLOAT_FIELDS = sorted(
    {
        (cls.__name__, name)
        for cls in _sections()
        for name, f in cls.model_fields.items()
        if _is_float(f.annotation)
    }
)
SECTIONS = {cls.__name__: cls for cls in _sections()}


def test_the_float_fields_are_found() -> None:
    """The walk sees the fields the probe broke (a walk that found none would pass vacuously)."""
    assert {
        ("RLConfig", "lr"),
        ("SamplingConfig", "temperature"),
        ("DistillConfig", "request_timeout_s"),
        ("RewardConfig", "alpha"),
    } <= set(FLOAT_FIELDS)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, "inf"])
@pytest.mark.parametrize(("section", "field"), FLOAT_FIELDS)
def test_every_float_field_refuses_a_non_finite_value_by_name(
    section: str, field: str, value: object
) -> None:
    with pytest.raises(ConfigError) as err:
        validate(SECTIONS[section], {field: value}, "test")
    assert f"{field}: Input should be a finite number" in str(err.value)


def test_a_reward_weight_of_nan_is_named_as_the_config_value_not_as_a_reward() -> None:
    with pytest.raises(
        ConfigError, match=r"reward\.alpha: Input should be a finite number \(got 'nan'\)"
    ):
        validate(TrainConfig, {"reward": {"alpha": "nan"}})


def test_a_key_written_twice_is_refused_with_both_lines(tmp_path: Path) -> None:
    cfg = tmp_path / "twice.yaml"
    cfg.write_text("rl:\n  steps: 3\nsft:\n  lr: 0.1\nrl:\n  lr: 0.5\n")
    with pytest.raises(ConfigError, match=r"the key 'rl' is written twice \(lines 1 and 5\)"):
        load(cfg)
    with pytest.raises(ConfigError, match=r"'steps' is written twice \(lines 2 and 3\)"):
        parse_yaml("rl:\n  steps: 3\n  steps: 4\n", "nested")


def test_a_merge_key_may_be_overridden_and_equal_keys_under_different_parents_are_fine() -> None:
    data = parse_yaml("a: &a {x: 1, y: 2}\nb:\n  <<: *a\n  x: 3\nc: {x: 4}\n", "merge")
    assert data == {"a": {"x": 1, "y": 2}, "b": {"x": 3, "y": 2}, "c": {"x": 4}}


GIB = 1 << 30


def test_a_step_over_the_memory_bound_is_named_with_the_fields_and_the_bound() -> None:
    bound = 16 * GIB // ITEM_FLOOR_BYTES  # 65,536 items on a 16 GiB machine
    cfg = TrainConfig.model_construct(
        rl=TrainConfig().rl.model_copy(update={"group_size": 1_000_000_000}),
        sft=TrainConfig().sft,
        prior=TrainConfig().prior,
    )
    problems = step_size_problems(cfg, memory=16 * GIB)
    assert len(problems) == 1 and "rl.group_size=1000000000" in problems[0]
    assert f"over the bound of {bound:,}" in problems[0] and "16 GiB" in problems[0]
    assert step_size_problems(TrainConfig(), memory=16 * GIB) == []


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("rl.group_size", 1_000_000_000),
        ("rl.prompts_per_step", 100_000_000),
        ("rl.oversample", 1e300),
        ("sft.batch_size", 10**12),
        ("prior.batch_size", 10**12),
    ],
)
def test_sizes_no_machine_holds_are_refused_when_the_config_loads(key: str, value: float) -> None:
    section, field = key.split(".")
    with pytest.raises(ConfigError) as err:
        validate(TrainConfig, {section: {field: value}})
    assert f"{key}=" in str(err.value) and "over the bound of" in str(err.value)


def test_the_bound_is_exact_at_its_edge() -> None:
    rl = TrainConfig().rl
    small = TrainConfig().sft.model_copy(update={"batch_size": 1})
    fits = TrainConfig.model_construct(
        rl=rl.model_copy(update={"group_size": 2, "prompts_per_step": 2}),
        sft=small,
        prior=TrainConfig().prior.model_copy(update={"batch_size": 1}),
    )
    assert (
        step_size_problems(fits, memory=4 * ITEM_FLOOR_BYTES) == []
    )  # 2 × 2 rollouts: exactly the bound
    over = step_size_problems(fits, memory=4 * ITEM_FLOOR_BYTES - 1)
    assert len(over) == 1 and "= 4 in one step, over the bound of 3" in over[0]
