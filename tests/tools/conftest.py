"""Shared fixtures of the tool tests: one tiny synthetic H.264 video and context/call builders."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from paravt.tools import ToolContext, VisualBudget
from paravt.video import Encoding, probe, write_video

DURATION_S = 40.0
FPS = 2.0


@pytest.fixture(scope="session")
def video(tmp_path_factory: pytest.TempPathFactory) -> str:
    """40 s, 2 fps, 320×240; frame i is flat grey level 3·i (so a frame's time is readable)."""
    n = int(DURATION_S * FPS)
    frames = [np.full((240, 320, 3), 3 * i, np.uint8) for i in range(n)]
    path = Path(tmp_path_factory.mktemp("tools-video")) / "clip.mp4"
    write_video(path, frames, FPS, encoding=Encoding(gop=10, bframes=False))
    path.chmod(0o644)
    return str(path)


@pytest.fixture
def make_ctx(video: str) -> Callable[..., ToolContext]:
    info = probe(video)

    def make(
        episode_id: str = "ep-0", budget: VisualBudget | None = None, **kw: Any
    ) -> ToolContext:
        return ToolContext(
            episode_id=episode_id, video=video, info=info, budget=budget or VisualBudget(), **kw
        )

    return make
