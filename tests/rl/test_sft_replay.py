"""`sft.prior_replay`: the simulated base's own habit traces join the SFT pool at a share (the pull
of a pretraining far larger than SFT, which a tiny base lacks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from paravt.config import TrainConfig
from paravt.data.rows import RLRow
from paravt.data.schema import read_rows
from paravt.data.synth.build import SceneSpec, build
from paravt.data.synth.prior import Habit, prior_rows
from paravt.errors import DataError
from paravt.jsonl import read_jsonl
from paravt.rl.loop import run_training
from paravt.rl.prior import replay_count, replay_traces
from paravt.rl.sft import SFTTrainer


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = Path(tmp_path_factory.mktemp("synth"))
    build(out, videos=3, eval_videos=0, seed=0, workers=1, scenes=SceneSpec(max_duration=120))
    return out


def _cfg(synth: Path, share: float, **sft: object) -> TrainConfig:
    return TrainConfig.model_validate(
        {
            "data": str(synth / "sft.parquet"),
            "video": {"overview_max_pixels": 64 * 64},
            "prior": {
                "tool_mix": 1.0,
                "think_sentences": 2,
                "json_share": 1.0,
                "python_share": 1.0,
                "habit_copies": 2,
                "seed": 3,
            },
            "sft": {
                "prior_replay": share,
                "replay_data": str(synth / "base.parquet"),
                **sft,
            },
        }
    )


def test_replay_count_makes_the_share_of_the_pool() -> None:
    assert replay_count(0.25, 30) == 10  # 10 of 40
    assert replay_count(0.5, 7) == 7
    assert replay_count(0.0, 100) == 0


def test_replayed_traces_are_the_bases_own_habit_traces_seeded(synth: Path) -> None:
    cfg = _cfg(synth, 0.5)
    got = replay_traces(cfg, pool=5)
    prompts = [r for r in read_rows(synth / "base.parquet") if isinstance(r, RLRow)]
    own = {
        t.id: t
        for t in prior_rows(prompts, tool_mix=1.0, habit=Habit.of(cfg.prior), seed=3, copies=2)
    }
    assert len(got) == 5 and len({t.id for t in got}) == 5  # drawn without replacement
    for t in got:
        assert t.id.startswith("replay-")
        base = own[t.id.removeprefix("replay-")]
        assert t.messages == base.messages  # the very trace the base trained on
    # the python habit the base learnt is what SFT now sees replayed
    assert any('crop_video("video.mp4"' in m.text for t in got for m in t.messages)
    assert replay_traces(cfg, pool=5) == got  # seeded by sft.seed
    others = replay_traces(_cfg(synth, 0.5, seed=1), pool=5)
    assert {t.id for t in others} != {t.id for t in got}
    assert replay_traces(_cfg(synth, 0.0), pool=5) == []


def test_replay_without_data_or_with_too_few_prompts_says_what_to_set(synth: Path) -> None:
    with pytest.raises(DataError, match="sft.replay_data"):
        replay_traces(_cfg(synth, 0.3, replay_data=None), pool=5)
    with pytest.raises(DataError, match="habit traces"):
        replay_traces(_cfg(synth, 0.9, seed=0), pool=1_000)
    cfg = _cfg(synth, 0.3, replay_data=None)
    with pytest.raises(DataError, match="sft.replay_data"):
        SFTTrainer.check_data(cfg)  # before any model loads
    cfg = _cfg(synth, 0.3, replay_data=str(synth / "sft.parquet"))  # no prompt rows there
    with pytest.raises(DataError, match="prompts for sft.prior_replay"):
        SFTTrainer.check_data(cfg)


def test_the_replayed_traces_join_the_trained_pool(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str
) -> None:
    epochs = {}
    for share in (0.0, 0.5):
        cfg = _cfg(synth, share, max_steps=2, batch_size=2, warmup_steps=0, save_every=100)
        cfg.out_dir, cfg.model.path = str(tmp_path / f"r{share}"), tiny_qwen3_dir
        out = run_training(cfg, kind="sft", progress=False)
        epochs[share] = [r["training/epoch"] for r in read_jsonl(out / "train_log.jsonl")]
    # training/epoch = step × batch / pool: at share 0.5 the pool is twice the SFT examples
    assert epochs[0.0][1] == pytest.approx(2 * epochs[0.5][1])


def test_each_prior_replays_its_own_habits_in_the_repro(tmp_path: Path) -> None:
    """The weak base's SFT replays the weak base's traces (no tool form), not the strong one's."""
    from paravt.repro.presets import PRESETS, base_config
    from paravt.repro.training import prior_config

    cfg = base_config(tmp_path, PRESETS["demo"])
    assert cfg.sft.replay_data == str(tmp_path / "synth" / "base.parquet")
    strong, weak = prior_config(cfg, "strong").prior, prior_config(cfg, "weak").prior
    assert strong == cfg.prior and strong.tool_mix == 1.0 and strong.think_runaway > 0
    assert (weak.tool_mix, weak.think_tail, weak.think_runaway) == (0.0, 0.0, 0.0)
    assert cfg.prior.tool_mix == 1.0  # the run's own config is left as it was
