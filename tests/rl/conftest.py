"""Fixtures of the trainer tests (one torch thread is set for the whole suite in
tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from vl_families import FAMILIES

from paravt.config import TrainConfig
from paravt.data.synth.build import SceneSpec, build
from paravt.models.hf.loading import LoadedPolicy, load_policy


@pytest.fixture(scope="module")
def policy(tiny_qwen3_dir: str) -> LoadedPolicy:
    return load_policy(tiny_qwen3_dir)


@pytest.fixture(scope="module", params=FAMILIES)
def family_policy(
    request: pytest.FixtureRequest, tiny_model_dir: Callable[..., str]
) -> tuple[str, LoadedPolicy]:
    """Each tiny Qwen-VL family in turn: (family, its xs policy)."""
    return request.param, load_policy(tiny_model_dir(request.param, "xs"))


@pytest.fixture(scope="module")
def short_synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ParaVT-Synth of 3 train videos of at most 120 s (the supervised trainers' tests)."""
    out = Path(tmp_path_factory.mktemp("synth"))
    build(out, videos=3, eval_videos=0, seed=0, workers=1, scenes=SceneSpec(max_duration=120))
    return out


@pytest.fixture
def prior_cfg(tmp_path: Path, tiny_qwen3_dir: str) -> Callable[..., TrainConfig]:
    """A small base-stage config on ``data`` (4 steps of 2 rows, the strong prior, 64×64
    overviews) with ``prior`` settings over it: the prior stages' trainer tests."""

    def make(data: Path, **prior: object) -> TrainConfig:
        return TrainConfig.model_validate(
            {
                "out_dir": str(tmp_path),
                "data": str(data),
                "model": {"path": tiny_qwen3_dir},
                "video": {"overview_max_pixels": 64 * 64},
                "prior": {"steps": 4, "batch_size": 2, "tool_mix": 1.0, **prior},
            }
        )

    return make
