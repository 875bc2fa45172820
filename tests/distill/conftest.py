"""Fixtures of the distillation tests: one small synth set per session (5 videos of 60–120 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from paravt.data.synth.build import SceneSpec, build


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = Path(tmp_path_factory.mktemp("distill-synth"))
    build(
        out,
        videos=5,
        eval_videos=0,
        seed=3,
        workers=1,
        scenes=SceneSpec(min_duration=60, max_duration=120),
    )
    return out
