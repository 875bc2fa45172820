"""A replica worker loads its policy without transformers' progress bars: the parent's rich output
is the only progress a user sees (`make demo` showed "Loading weights" bars in every stage)."""

from __future__ import annotations

import asyncio

import pytest

from paravt.models.hf.loading import load_policy
from paravt.models.hf.replicas import ReplicaGenerator


@pytest.mark.timeout(180)
def test_worker_load_prints_no_progress_bar(
    tiny_qwen3_dir: str, capfd: pytest.CaptureFixture[str]
) -> None:
    from transformers.utils import logging as hf_logging

    # the parent's own setting must not be what keeps the worker quiet
    hf_logging.enable_progress_bar()
    policy = load_policy(tiny_qwen3_dir)
    capfd.readouterr()
    gen = ReplicaGenerator(policy, 2)
    try:
        assert gen.wait_started(timeout_s=120.0), [r.down for r in gen.remotes]
    finally:
        asyncio.run(gen.aclose())
    err = capfd.readouterr().err
    assert "Loading weights" not in err and "it/s]" not in err, err[-500:]
