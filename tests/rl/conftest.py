"""Fixtures of the trainer tests (one torch thread is set for the whole suite in tests/conftest.py)."""

from __future__ import annotations

import pytest

from paravt.models.hf.loading import LoadedPolicy, load_policy


@pytest.fixture(scope="module")
def policy(tiny_qwen3_dir: str) -> LoadedPolicy:
    return load_policy(tiny_qwen3_dir)
