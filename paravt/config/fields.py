"""What every config section shares: the strict base model (unknown keys refused, every float
finite) and the fields that more than one section declares, each default written once."""

from __future__ import annotations

import typing
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


def _micro_batch_tokens() -> Any:
    """The one definition of the batched-pass budget, shared by the sft, prior and rl sections."""
    return Field(
        8192,
        ge=1,
        description="Padded tokens (rows × longest row) one forward of the batched "
        "training pass may hold: sequences go in right-padded micro-batches with their media "
        "(paravt/rl/batch.py); a longer sequence goes alone.",
    )


_Beta = Annotated[float, Field(ge=0, lt=1)]  # one of AdamW's betas


def _weight_decay(default: float = 0.0) -> Any:
    """The one definition of AdamW's decoupled weight decay, shared by the rl, sft and prior
    sections (the rl section's default is the release's 0.01)."""
    return Field(
        default,
        ge=0,
        description="AdamW's decoupled weight decay of the trainer's optimiser; both "
        "engines get it (local: torch.optim.AdamW; verl: actor.optim.weight_decay, whose own "
        "default 0.01 is not used).",
    )


def _adam_betas() -> Any:
    """The one definition of AdamW's betas, shared by the rl, sft and prior sections."""
    return Field(
        (0.9, 0.999),
        description="AdamW's (beta1, beta2): decay rates of the gradient's running "
        "mean and of its square, each in [0, 1); both engines get them (verl: actor.optim.betas).",
    )


def _max_row_bytes() -> Any:
    """The one definition of the row size cap (the train/eval and the distill configs)."""
    return Field(
        1 << 20,
        ge=1024,
        description="Largest row read (bytes of its messages and "
        "extra_info JSON): a bigger row is a data error named by its id, refused before it "
        "is parsed or trained on (paravt.data.screen; a 50 MB row took 58 s and 6.4 GB).",
    )


class _Strict(BaseModel):
    """Every section: unknown keys refused, and every float finite (``allow_inf_nan=False``: inf,
    -inf and nan are refused under the field's name, in every section; issue 34)."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, frozen=False, allow_inf_nan=False
    )

    @model_validator(mode="before")
    @classmethod
    def _yaml_off(cls, data: Any) -> Any:
        """YAML 1.1 reads an unquoted ``off`` (and ``no``, ``false``) as false: a choice field whose
        choices include 'off' takes false as 'off' (``reward.tool_mode: off`` as the docs write it;
        issue 48). True is refused with the advice to quote (``loading.validation_message``)."""
        if not isinstance(data, dict):
            return data
        fixed = {
            name: "off"
            for name, value in data.items()
            if value is False and name in cls.model_fields and _offers_off(cls, name)
        }
        return {**data, **fixed} if fixed else data


def _offers_off(cls: type[BaseModel], name: str) -> bool:
    annotation = cls.model_fields[name].annotation
    return typing.get_origin(annotation) is typing.Literal and "off" in typing.get_args(annotation)
