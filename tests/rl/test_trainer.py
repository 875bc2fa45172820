"""The single-process trainers end to end on the tiny Qwen3-VL and a 4-video ParaVT-Synth set:
SFT learns and resumes bit-for-bit, SFT sequences mask the right tokens, a PARA-GRPO run logs the
docs/ARCHITECTURE.md §6 metrics, and the ablation flags change what the rollouts look like.

Budget: about a minute on 2 cores (small frames, 24-token turns, 2 rollouts per prompt).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from paravt.agent.inputs import load_episode_inputs
from paravt.config import RUN_CONFIG, TrainConfig, load_for_model
from paravt.data.synth.build import build
from paravt.jsonl import read_jsonl as read_log
from paravt.models.base import ChatMessage
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_processor
from paravt.protocol.tags import THINK_PREFIX
from paravt.rl.grpo import GRPOTrainer
from paravt.rl.loop import run_training
from paravt.rl.sequence import build_sequence
from paravt.rl.session import PolicySession
from paravt.tracking.names import RL_RENAMED
from paravt.video import Frames, sample_frames

#: docs/ARCHITECTURE.md §6 keys every RL step must log (the report plots these).
RL_KEYS = (
    "f_tau",
    "kappa",
    "acc",
    "actor/kl_loss",
    "actor/kl_coef",
    "actor/loss",
    "actor/pg_loss",
    "actor/pg_clipfrac",
    "clip_ratio/low_mean",
    "clip_ratio/high_mean",
    "actor/entropy",
    "actor/grad_norm",
    "critic/rewards/mean",
    "critic/rewards/max",
    "critic/rewards/min",
    "prompt_length/mean",
    "prompt_length/max",
    "prompt_length/min",
    "training/epoch",
    "timing_s/adv",
    "timing_s/old_log_prob",
    "perf/time_per_step",
    "perf/mfu/actor",
    "perf/mfu_limit_flops",
    "reward/acc",
    "reward/format",
    "reward/anchor",
    "reward/tool",
    "skip_tool_rate",
    "filter/zero_var_dropped",
    "filter/rank_dropped",
    "timing_s/gen",
    "timing_s/reward",
    "timing_s/ref",
    "timing_s/update_actor",
    "timing_s/tools",
    "timing_s/step",
    "response_length/mean",
    "response_length/max",
    "response_length/min",
    "response_length/clip_ratio",
    "critic/score/mean",
    "critic/score/std",
    "critic/score/max",
    "critic/score/min",
    "critic/frac_reward_zero_std",
    "perf/throughput",
    "perf/samples_per_s",
    "perf/total_num_tokens",
    "perf/cumulative_tokens",
    "perf/max_rss_gb",
    "actor/ppo_kl",
    "actor/lr",
)


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = Path(tmp_path_factory.mktemp("synth"))
    build(out, videos=4, eval_videos=0, seed=0, workers=1)
    return out


def load_examples_count(path: Path) -> list[Any]:
    """The SFT rows the trainer trains on (the main agent's: sub-agent rows are off by default)."""
    from paravt.data.schema import read_rows

    return [r for r in read_rows(path) if r.kind == "main"]


def _cfg(out: Path, data: Path, model: str, **sections: dict[str, Any]) -> TrainConfig:
    base: dict[str, Any] = {
        "out_dir": str(out),
        "data": str(data),
        "model": {"path": model},
        "video": {
            "overview_nframes": 6,
            "overview_max_pixels": 64 * 64,
            "crop_max_pixels": 64 * 64,
            "crop_max_frames": 4,
        },
        "sampling": {"max_new_tokens": 24, "sub_max_new_tokens": 12},
        "rollout": {"max_turns": 1},
        "sft": {"lr": 3e-3, "batch_size": 4, "warmup_steps": 0, "save_every": 100},
        "rl": {
            "group_size": 2,
            "prompts_per_step": 2,
            "steps": 2,
            "lr": 1e-5,
            "save_every": 100,
            "gating": {"choices": [4, 8]},
        },
    }
    for name, values in sections.items():
        base[name] = {**base.get(name, {}), **values}
    return TrainConfig.model_validate(base)


# ---- SFT -------------------------------------------------------------------------------------


def test_sft_lowers_the_loss_in_ten_steps(tmp_path: Path, synth: Path, tiny_qwen3_dir: str) -> None:
    cfg = _cfg(
        tmp_path / "run", synth / "sft.parquet", tiny_qwen3_dir, sft={"max_steps": 10, "epochs": 4}
    )
    out = run_training(cfg, kind="sft", progress=False)
    log = read_log(out / "train_log.jsonl")
    losses = [r["train/loss"] for r in log]
    assert len(losses) == 10
    for r in log:  # verl's SFT names, TRL's entropy and token accuracy (docs/tracking.md)
        assert not {"loss", "lr", "grad_norm"} & set(r)
        assert r["train/lr"] > 0 and r["train/grad_norm"] > 0 and 0 < r["train/mfu"]
        assert 0 < r["entropy"] <= math.log(2058) and 0 <= r["mean_token_accuracy"] <= 1
    rows = len(load_examples_count(synth / "sft.parquet"))
    assert [r["training/epoch"] for r in log[:2]] == [0.0, 4 / rows]  # rows seen / rows
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3
    assert (out / "model" / "config.json").is_file()
    _check_the_model_carries_its_settings(out / "model", synth)


def _check_the_model_carries_its_settings(model: Path, synth: Path) -> None:
    """The checkpoint holds the settings it was trained with; infer runs with them (issue: 256 new
    tokens at inference for a model trained with 384 cut its first turn mid-call)."""
    cfg, source = load_for_model(str(model))
    assert source == str(model / RUN_CONFIG) and cfg.sampling.max_new_tokens == 24
    assert cfg.video.overview_nframes == 6
    assert (
        load_for_model(str(model), overrides=["sampling.max_new_tokens=7"])[
            0
        ].sampling.max_new_tokens
        == 7
    )
    video = synth / "videos" / "train" / "v0000.mp4"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from paravt.cli import app; app()",
            "infer",
            "--model",
            str(model),
            "--video",
            str(video),
            "--question",
            "What flashes?",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"settings: {model / RUN_CONFIG}" in proc.stderr
    out = json.loads(proc.stdout)
    # an answer is reported only when the agent wrote one; otherwise "extracted" is what the reward
    # reads
    assert (out["answer"] is not None) == ("<answer>" in out["turns"][-1])
    assert out["tokens"]["main_visual"] > 0 and len(out["turns"]) <= 3


def test_sft_resume_logs_the_same_losses_as_an_uninterrupted_run(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str
) -> None:
    sft = {
        "max_steps": 6,
        "save_every": 3,
        "batch_size": 1,
        "warmup_steps": 2,
    }
    straight = run_training(
        _cfg(tmp_path / "a", synth / "sft.parquet", tiny_qwen3_dir, sft=sft),
        kind="sft",
        progress=False,
    )
    cfg = _cfg(tmp_path / "b", synth / "sft.parquet", tiny_qwen3_dir, sft=sft)
    killed = run_training(cfg, kind="sft", progress=False, stop_after=3)
    assert [r["step"] for r in read_log(killed / "train_log.jsonl")] == [1, 2, 3]
    assert not (killed / "model").exists()  # stopped like a killed run: no final save
    resumed = run_training(cfg, kind="sft", resume=True, progress=False)
    a = read_log(straight / "train_log.jsonl")
    b = read_log(resumed / "train_log.jsonl")
    assert [r["step"] for r in b] == [1, 2, 3, 4, 5, 6]
    assert [r["train/loss"] for r in a] == [r["train/loss"] for r in b]  # exact on the CPU
    assert [r["train/lr"] for r in a] == [r["train/lr"] for r in b]
    for k in ("entropy", "mean_token_accuracy"):
        assert [r[k] for r in a] == [r[k] for r in b]


@pytest.fixture(scope="module")
def codec(tiny_qwen3_dir: str) -> ChatCodec:
    return ChatCodec(load_processor(tiny_qwen3_dir))


@pytest.fixture(scope="module")
def frames(synth: Path) -> Frames:
    return sample_frames(
        synth / "videos" / "train" / "v0000.mp4", 0.0, 10.0, nframes=4, max_pixels=64 * 64
    )


def _trace(frames: Frames) -> list[ChatMessage]:
    return [
        ChatMessage("system", "You watch videos."),
        ChatMessage("user", "<video>\nWhat colour is the flash?", videos=(frames,)),
        ChatMessage("assistant", THINK_PREFIX + "scan</think>\n<tool_call>crop</tool_call>"),
        ChatMessage("tool", "[1] 00:00-00:10: a red flash"),
        ChatMessage("assistant", THINK_PREFIX + "red</think>\n<answer>red</answer>"),
    ]


def _trained_text(traj, codec: ChatCodec, bit: int) -> str:
    return codec.decode(
        [i for i, m in zip(traj.ids, traj.loss_mask) if m == bit], skip_special_tokens=False
    )


def test_sft_sequence_with_masked_prefix_trains_the_rest_only(
    codec: ChatCodec, frames: Frames
) -> None:
    traj = build_sequence(_trace(frames), codec, mask_think_prefix=True)
    trained = _trained_text(traj, codec, 1)
    assert trained == (
        "scan</think>\n<tool_call>crop</tool_call><|im_end|>"
        "red</think>\n<answer>red</answer><|im_end|>"
    )
    context = _trained_text(traj, codec, 0)
    assert context.count("<think>\n") == 2  # both forced prefixes are context
    assert "a red flash" in context and "What colour" in context
    think_id = codec.tokenizer.convert_tokens_to_ids("<think>")
    assert all(m == 0 for i, m in zip(traj.ids, traj.loss_mask) if i == think_id)
    assert len(traj.videos) == 1 and traj.prompt_len == traj.loss_mask.index(1)


def test_sft_sequence_trains_the_think_tag_by_default(codec: ChatCodec, frames: Frames) -> None:
    with_prefix = build_sequence(_trace(frames), codec, mask_think_prefix=True)
    without = build_sequence(_trace(frames), codec)
    assert without.ids == with_prefix.ids  # same tokens, different masks
    assert _trained_text(without, codec, 1).startswith("<think>\nscan</think>")
    assert without.n_sampled - with_prefix.n_sampled == 2 * len(codec.encode_text(THINK_PREFIX))


# ---- PARA-GRPO -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rl_run(
    tmp_path_factory: pytest.TempPathFactory, synth: Path, tiny_qwen3_dir: str
) -> list[dict[str, Any]]:
    out = Path(tmp_path_factory.mktemp("rl")) / "run"
    run_training(_cfg(out, synth / "rl.parquet", tiny_qwen3_dir), kind="rl", progress=False)
    assert (out / "model" / "config.json").is_file()
    return read_log(out / "train_log.jsonl")


def test_rl_run_logs_every_design_metric_each_step(rl_run: list[dict[str, Any]]) -> None:
    assert [r["step"] for r in rl_run] == [1, 2]
    first, second = rl_run
    assert second["perf/cumulative_tokens"] == pytest.approx(
        first["perf/total_num_tokens"] + second["perf/total_num_tokens"]
    )
    assert first["training/epoch"] == 0.0
    for row in rl_run:
        missing = [k for k in RL_KEYS if k not in row]
        assert not missing, f"step {row['step']} lacks {missing}"
        assert row["timing_s/gen"] > 0 and row["timing_s/update_actor"] >= 0
        assert row["timing_s/ref"] >= 0 and row["timing_s/step"] >= row["timing_s/gen"]
        assert (
            row["response_length/min"] <= row["response_length/mean"] <= row["response_length/max"]
        )
        assert 0.0 <= row["response_length/clip_ratio"] <= 1.0
        assert row["critic/score/min"] <= row["critic/score/mean"] <= row["critic/score/max"]
        assert row["critic/score/mean"] == pytest.approx(row["critic/rewards/mean"])
        assert row["critic/rewards/min"] <= row["critic/rewards/mean"] <= row["critic/rewards/max"]
        assert row["clip_ratio/low_mean"] + row["clip_ratio/high_mean"] == pytest.approx(
            row["actor/pg_clipfrac"]
        )
        assert row["perf/time_per_step"] == row["timing_s/step"]
        # the KL reward's no-grad policy pass (rl.kl_in reward, the default): timed on its own
        assert row["timing_s/old_log_prob"] > 0 and row["timing_s/adv"] >= 0
        assert 0 < row["perf/mfu/actor"] and row["perf/mfu_limit_flops"] > 0
        assert row["actor/kl_coef"] == TrainConfig().rl.kl_coef
        assert row["training/epoch"] == int(row["training/epoch"])  # verl's: the data epoch
        assert 0 < row["prompt_length/min"] <= row["prompt_length/max"]
        assert not set(RL_RENAMED) & set(row)  # the old names are gone
        assert row["perf/throughput"] == pytest.approx(
            row["perf/total_num_tokens"] / row["timing_s/step"]
        )
        assert row["perf/samples_per_s"] == pytest.approx(row["n"] / row["timing_s/step"])
        assert row["perf/max_rss_gb"] > 0.05
        # 2 prompts x G=2, rl.filter offline (the paper's): every group is trained, a zero-variance
        # one included (online: test_filter_mode.py)
        assert row["filter/zero_var_dropped"] == row["filter/rank_dropped"] == 0.0
        assert row["groups/kept"] == 2 and row["critic/frac_reward_zero_std"] in (0.0, 0.5, 1.0)
        assert 0.0 <= row["acc"] <= 1.0 and row["kappa"] >= 0.0
        assert any(k.startswith("acc/n/") and k[len("acc/n/") :] in ("4", "8") for k in row)


def test_rl_log_uses_the_contract_names_the_report_plots(rl_run: list[dict[str, Any]]) -> None:
    """The metrics name the mean reward ``critic/rewards/mean`` (verl's; the progress bar of
    ``paravt.rl.loop`` reads it) and the closure and reversion rates ``closed/*`` and
    ``tool_code_rate`` (``paravt.report.plots.TRAIN_METRICS`` plots them)."""
    wanted = (
        "critic/rewards/mean",
        "closed/think",
        "closed/tool_call",
        "closed/answer",
        "tool_code_rate",
    )
    missing = [k for k in wanted if k not in rl_run[0]]
    assert not missing, f"train_log.jsonl lacks {missing}; it has {sorted(rl_run[0])}"


def _one_step(tmp_path: Path, synth: Path, model: str, **sections: dict[str, Any]):
    cfg = _cfg(tmp_path / "run", synth / "rl.parquet", model, **sections)
    session = PolicySession.create(cfg.model, cfg.rl, rollout=cfg.rollout)
    trainer = GRPOTrainer(cfg, load_episode_inputs(Path(cfg.data)), session)
    return cfg, session, trainer.run_step(0).results


def test_think_prefix_off_leaves_the_response_start_to_the_policy(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str
) -> None:
    cfg, s, results = _one_step(
        tmp_path,
        synth,
        tiny_qwen3_dir,
        rollout={"think_prefix": False, "max_turns": 0},
        rl={"kl_coef": 0.0},
    )
    bare = s.codec.generation_prompt("")
    assert len(results) == 4
    for r in results:
        head = r.main.ids[: r.main.prompt_len]
        assert head[-len(bare) :] == bare  # the response follows "<|im_start|>assistant\n" directly
        assert not r.completion.startswith(THINK_PREFIX)


def test_think_prefix_on_forces_the_tag_as_context(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str
) -> None:
    cfg, s, results = _one_step(
        tmp_path, synth, tiny_qwen3_dir, rollout={"max_turns": 0}, rl={"kl_coef": 0.0}
    )
    forced = s.codec.generation_prompt(THINK_PREFIX)
    for r in results:
        assert r.main.ids[r.main.prompt_len - len(forced) : r.main.prompt_len] == forced
        assert r.completion.startswith(THINK_PREFIX)


def test_gating_off_gives_every_prompt_the_configured_overview(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str
) -> None:
    cfg, _, results = _one_step(
        tmp_path,
        synth,
        tiny_qwen3_dir,
        rollout={"max_turns": 0},
        rl={"kl_coef": 0.0, "gating": {"enabled": False, "choices": [4, 8]}},
    )
    assert cfg.video.overview_nframes == 6  # not one of the gating choices
    assert {r.input.nframes for r in results} == {6}
    assert all(len(r.main.videos[0]) == 6 for r in results)


def test_gating_on_draws_overviews_from_the_choices_per_group(
    tmp_path: Path, synth: Path, tiny_qwen3_dir: str
) -> None:
    _, _, results = _one_step(
        tmp_path, synth, tiny_qwen3_dir, rollout={"max_turns": 0}, rl={"kl_coef": 0.0}
    )
    ns = [r.input.nframes for r in results]
    assert set(ns) <= {4, 8}
    assert ns[0] == ns[1] and ns[2] == ns[3]  # the G rollouts of one prompt share n
    assert all(len(r.main.videos[0]) == r.input.nframes for r in results)
