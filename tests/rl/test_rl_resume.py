"""A killed PARA-GRPO run resumed from its checkpoint logs what an uninterrupted run logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paravt.config import TrainConfig
from paravt.data.synth.build import build
from paravt.data.synth.corpus import protocol_corpus
from paravt.models.tiny import build_tiny
from paravt.rl.loop import run_training


def _cfg(root: Path, out: str) -> TrainConfig:
    cfg = TrainConfig()
    cfg.out_dir, cfg.data, cfg.model.path = (
        str(root / out),
        str(root / "synth" / "rl.parquet"),
        str(root / "base"),
    )
    cfg.video.overview_max_pixels = cfg.video.crop_max_pixels = 64 * 64
    cfg.video.crop_max_frames = 4
    cfg.sampling.max_new_tokens, cfg.sampling.sub_max_new_tokens = 24, 8
    cfg.rollout.max_context_tokens = 4096
    cfg.rl.steps, cfg.rl.save_every, cfg.rl.group_size, cfg.rl.prompts_per_step = 4, 2, 2, 1
    cfg.rl.drop_zero_variance = False  # keep every group so every step updates
    cfg.rl.lr = 1e-3  # large enough that the weights visibly move between steps
    return cfg


def _log(run: Path) -> list[dict]:
    """Logged metrics without wall times (and MFU: a rate over a limit each process measures).
    ``logprob_mismatch`` compares against the SAMPLING logprobs, whose last bits depend on how the
    backend padded its batch; it is rounded."""
    rows = [json.loads(x) for x in (run / "train_log.jsonl").read_text().splitlines()]
    return [
        {
            k: (round(v, 6) if k == "logprob_mismatch" else v)
            for k, v in r.items()
            if not k.startswith(
                ("timing_s/", "perf/throughput", "perf/samples", "perf/max_", "perf/time_per_step")
            )
            and not k.startswith("perf/mfu")  # wall time, and the limit measured per process
        }
        for r in rows
    ]


@pytest.mark.timeout(300)
def test_resume_after_kill_equals_uninterrupted_run(tmp_path: Path) -> None:
    build(tmp_path / "synth", videos=2, eval_videos=1, seed=0)
    build_tiny("qwen3_vl", "xs", tmp_path / "base", corpus=protocol_corpus())
    run_training(_cfg(tmp_path, "full"), kind="rl", progress=False)
    killed = _cfg(tmp_path, "killed")
    run_training(
        killed, kind="rl", progress=False, stop_after=3
    )  # dies during step 3, after the step-2 checkpoint
    assert [r["step"] for r in _log(tmp_path / "killed")] == [1, 2, 3]
    run_training(killed, kind="rl", progress=False, resume=True)
    full, resumed = _log(tmp_path / "full"), _log(tmp_path / "killed")
    assert [r["step"] for r in resumed] == [1, 2, 3, 4]
    assert resumed == full
    # the raw rollouts beside the log: one sample per step, the killed step's rows not doubled
    rolled = [
        json.loads(x) for x in (tmp_path / "killed" / "rollouts.jsonl").read_text().splitlines()
    ]
    assert rolled == [
        json.loads(x) for x in (tmp_path / "full" / "rollouts.jsonl").read_text().splitlines()
    ]
    assert sorted({r["step"] for r in rolled}) == [1, 2, 3, 4] and all(
        r["completion"] for r in rolled
    )
    # not vacuous: steps 3 and 4 rolled out different prompts/samples
    assert {k: v for k, v in full[2].items() if k != "step"} != {
        k: v for k, v in full[3].items() if k != "step"
    }
