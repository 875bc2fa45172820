"""Issue 13 item 8 (trainer side): an exception inside one rollout never kills the GRPO step.

Reproduced break: with G = 2 an exception inside one episode made ``run_group`` raise, and the
whole step with it. Here the overview probe of exactly one episode raises a non-``VideoError``
(as a bug in the video layer would); the step must finish, drop that group, and count the crash.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import paravt.agent.episode as episode_mod
from paravt.agent.inputs import load_episode_inputs
from paravt.rl.grpo import GRPOTrainer
from paravt.rl.session import PolicySession

sys.path.insert(0, str(Path(__file__).parent))
from test_trainer import _cfg, synth  # noqa: E402,F401  (the module's synth-data fixture)


def test_one_crashing_rollout_is_dropped_and_counted_not_fatal(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_probe, calls = episode_mod.probe, []

    def probe_that_breaks_once(path):
        calls.append(path)
        if len(calls) == 1:
            raise KeyError("stream index")  # not a VideoError: an unexpected bug
        return real_probe(path)

    monkeypatch.setattr(episode_mod, "probe", probe_that_breaks_once)
    cfg = _cfg(tmp_path / "run", synth / "rl.parquet", tiny_qwen3_dir, rl={"kl_coef": 0.0})
    session = PolicySession.create(cfg.model, cfg.rl, rollout=cfg.rollout)
    out = GRPOTrainer(cfg, load_episode_inputs(Path(cfg.data)), session).run_step(0)
    assert len(out.results) == 4 and sum(r.crashed for r in out.results) == 1
    assert out.metrics["episodes/crashed"] == 1.0
    assert out.metrics["filter/error_dropped"] == 1.0  # its group is not a training signal
    crashed = next(r for r in out.results if r.crashed)
    assert "KeyError" in (crashed.error or "") and crashed.end_reason == "error"
