"""`sft.prior_replay`: the simulated base's own habit traces join the SFT pool at a share (the pull
of a pretraining far larger than SFT, which a tiny base lacks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from paravt.config import TrainConfig
from paravt.data.rows import RLRow
from paravt.data.schema import read_rows
from paravt.data.synth.build import SceneSpec, build
from paravt.data.synth.prior import Habit, prior_rows
from paravt.errors import DataError
from paravt.jsonl import read_jsonl
from paravt.rl.loop import run_training
from paravt.rl.replay import check_replay_size, replay_count, replay_traces
from paravt.rl.sft import SFTTrainer


def _cfg(short_synth: Path, out: Path, share: float, **sft: object) -> TrainConfig:
    return TrainConfig.model_validate(
        {
            "out_dir": str(out),
            "data": str(short_synth / "sft.parquet"),
            "video": {"overview_max_pixels": 64 * 64},
            "prior": {
                "tool_mix": 1.0,
                "think_sentences": 2,
                "json_share": 1.0,
                "python_share": 1.0,
                "habit_copies": 2,
                "seed": 3,
            },
            "sft": {"prior_replay": share, "replay_data": str(short_synth / "base.parquet"), **sft},
        }
    )


def _traces(cfg: TrainConfig, pool: int) -> list[Any]:
    p = cfg.prior
    return replay_traces(
        str(cfg.sft.replay_data),
        sft=cfg.sft,
        pool=pool,
        tool_mix=p.tool_mix,
        habit=Habit.of(p),
        prior_seed=p.seed,
        copies=p.habit_copies,
    )


def test_replay_count_makes_the_share_of_the_pool() -> None:
    assert replay_count(0.25, 30) == 10  # 10 of 40
    assert replay_count(0.5, 7) == 7
    assert replay_count(0.0, 100) == 0


def test_replayed_traces_are_the_bases_own_habit_traces_seeded(
    short_synth: Path, tmp_path: Path
) -> None:
    cfg = _cfg(short_synth, tmp_path, 0.5)
    got = _traces(cfg, pool=5)
    prompts = [r for r in read_rows(short_synth / "base.parquet") if isinstance(r, RLRow)]
    own = {
        t.id: t
        for t in prior_rows(prompts, tool_mix=1.0, habit=Habit.of(cfg.prior), seed=3, copies=2)
    }
    assert len(got) == 5 and len({t.id for t in got}) == 5  # drawn without replacement
    for t in got:
        assert t.id.startswith("replay-")
        assert t.messages == own[t.id.removeprefix("replay-")].messages  # what the base learnt
    # the python habit the base learnt is what SFT now sees replayed
    assert any('crop_video("video.mp4"' in m.text for t in got for m in t.messages)
    assert _traces(cfg, pool=5) == got  # seeded by sft.seed: a resumed run, the same pool
    assert {t.id for t in _traces(_cfg(short_synth, tmp_path, 0.5, seed=1), pool=5)} != {
        t.id for t in got
    }
    assert _traces(_cfg(short_synth, tmp_path, 0.0), pool=5) == []


def test_a_share_without_data_or_prompts_is_refused_before_any_model_loads(
    short_synth: Path, tmp_path: Path
) -> None:
    with pytest.raises(ValidationError, match="sft.replay_data"):
        _cfg(short_synth, tmp_path, 0.3, replay_data=None)
    too_many = _cfg(short_synth, tmp_path, 0.9)
    with pytest.raises(DataError, match="lower sft.prior_replay"):
        check_replay_size(too_many.sft, copies=2, pool=1_000)
    with pytest.raises(DataError, match="lower sft.prior_replay"):
        SFTTrainer.check_data(_cfg(short_synth, tmp_path, 0.99))
    with pytest.raises(DataError, match="lower sft.prior_replay"):
        _traces(too_many, pool=1_000)
    no_prompts = _cfg(short_synth, tmp_path, 0.3, replay_data=str(short_synth / "sft.parquet"))
    with pytest.raises(DataError, match="prompts for sft.prior_replay"):
        SFTTrainer.check_data(no_prompts)
    SFTTrainer.check_data(_cfg(short_synth, tmp_path, 0.3))  # enough prompts: passes


def test_the_replayed_traces_join_the_trained_pool(
    tmp_path: Path, short_synth: Path, tiny_qwen3_dir: str
) -> None:
    epochs = {}
    for share in (0.0, 0.5):
        cfg = _cfg(
            short_synth, tmp_path / f"r{share}", share, max_steps=2, batch_size=2, warmup_steps=0
        )
        cfg.model.path = tiny_qwen3_dir
        out = run_training(cfg, kind="sft", progress=False)
        epochs[share] = [r["training/epoch"] for r in read_jsonl(out / "train_log.jsonl")]
    # training/epoch = step × batch / pool: at share 0.5 the pool is twice the SFT examples
    assert epochs[0.0][1] == pytest.approx(2 * epochs[0.5][1])


def test_each_prior_replays_its_own_habits_in_the_repro(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The weak base's SFT replays the weak base's traces (no tool form), not the strong one's."""
    import paravt.repro.training as tr
    from paravt.repro.presets import PRESETS, base_config

    cfg = base_config(tmp_path, PRESETS["demo"])
    assert cfg.sft.replay_data == str(tmp_path / "synth" / "base.parquet")
    seen: dict[str, Any] = {}

    class Stop(Exception):
        pass

    def train_stage(c: TrainConfig, kind: str, out: Path, what: str, **kw: Any) -> Path:
        seen.update(kw)
        raise Stop

    monkeypatch.setattr(tr, "pretrained_base", lambda *a, **k: (tmp_path / "base", {}))
    monkeypatch.setattr(tr, "train_stage", train_stage)
    with pytest.raises(Stop):
        tr.cold_start(tmp_path, cfg, PRESETS["demo"], "weak", tmp_path)
    weak = seen["prior"]
    assert weak == tr.prior_config(cfg, "weak").prior
    assert (weak.tool_mix, weak.think_tail, weak.think_runaway) == (0.0, 0.0, 0.0)
    assert tr.prior_config(cfg, "strong").prior == cfg.prior and cfg.prior.tool_mix == 1.0
    # the report stage is the strong base's: the weak one runs the same schedule without it
    assert cfg.prior.report_steps > 0 and (weak.report_steps, weak.report_replay) == (0, 0.0)
    assert weak.steps == cfg.prior.steps - cfg.prior.report_steps


def test_every_presets_run_replays_a_prefix_of_its_bases_prompts() -> None:
    """`short_synth/base.parquet` of a run holds the base's FIRST prompts (seeded per index), so its
    habit traces are the base's own only while the run's train videos are within the base's."""
    from paravt.repro.presets import PRESETS

    assert all(p.train_videos <= p.base.videos for p in PRESETS.values())


def test_a_runs_prompts_are_a_prefix_of_a_larger_builds(tmp_path: Path, short_synth: Path) -> None:
    small = tmp_path / "small"
    build(small, videos=2, eval_videos=0, seed=0, workers=1, scenes=SceneSpec(max_duration=120))
    a = [r for r in read_rows(small / "base.parquet") if isinstance(r, RLRow)]
    b = [r for r in read_rows(short_synth / "base.parquet") if isinstance(r, RLRow)]
    assert 0 < len(a) < len(b)
    assert [(r.id, r.messages) for r in a] == [(r.id, r.messages) for r in b[: len(a)]]
    habit = Habit(2, json_share=1.0, python_share=1.0)
    ta, tb = (prior_rows(x, tool_mix=1.0, habit=habit, seed=3, copies=2) for x in (a, b))
    assert [t.messages for t in ta] == [t.messages for t in tb[: len(ta)]]
