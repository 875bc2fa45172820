"""A small ParaVT-Synth build shared by the data tests (built once per session, ~1 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from paravt.data.synth.build import SceneSpec, build
from paravt.data.synth.manifest import Manifest


@pytest.fixture(scope="session")
def synth_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    build(out, videos=10, eval_videos=3, seed=7, scenes=SceneSpec(max_duration=160))
    return out


@pytest.fixture(scope="session")
def synth_manifest(synth_dir: Path) -> Manifest:
    import json

    d = json.loads((synth_dir / "manifest.json").read_text())
    return Manifest(**d)
