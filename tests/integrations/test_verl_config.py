"""The rendered verl config: composed with verl's own ppo_trainer defaults and validated by verl's
config checks and dataclasses (what ``verl.trainer.main_ppo`` runs first)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytest.importorskip("verl", reason="verl is not installed (pip install -e '.[verl]')")

from paravt.cli.train_verl import launch_verl, write_run_files  # noqa: E402
from paravt.config import (
    TrainConfig,  # noqa: E402
    VerlConfig,  # noqa: E402
    load,  # noqa: E402
)
from paravt.errors import ConfigError  # noqa: E402
from paravt.integrations.verl.render import render_verl_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _compose(config_dir: Path):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name="paravt_verl")


@pytest.fixture(scope="module")
def paper() -> tuple[TrainConfig, VerlConfig]:
    cfg = load(ROOT / "configs" / "qwen3vl_8b_paragrpo.yaml")
    return cfg, cfg.verl


def test_paper_config_carries_the_paper_hyperparameters(paper) -> None:
    cfg, verl = paper
    assert (cfg.rl.lr, cfg.rl.group_size, cfg.sampling.temperature, cfg.rl.kl_coef) == (
        2e-6,
        8,
        0.7,
        0.01,
    )
    assert (cfg.rl.clip_eps, cfg.sampling.max_new_tokens, cfg.reward.lambda_anchor) == (
        0.2,
        2048,
        0.5,
    )
    assert (cfg.reward.alpha, cfg.reward.beta, cfg.reward.gamma) == (0.4, 0.3, 0.3)
    assert cfg.rl.gating.choices == [4, 8, 16, 32, 64]
    assert cfg.model.path == "Qwen/Qwen3-VL-8B-Instruct" and cfg.rl.engine == "verl"
    assert verl.rollout_backend == "vllm" and verl.n_gpus_per_node == 8


def test_paper_config_loads_with_paravt_config_load(paper) -> None:
    assert load(ROOT / "configs" / "qwen3vl_8b_paragrpo.yaml").rl.engine == "verl"


def test_dry_run_config_passes_verls_own_validation(paper, tmp_path: Path, capsys) -> None:
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    cfg, verl = paper
    cfg = cfg.model_copy(
        update={"out_dir": str(tmp_path), "verl": verl.model_copy(update={"nnodes": 2})}
    )
    assert launch_verl(cfg, dry_run=True) == 0
    printed = capsys.readouterr().out
    assert "verl.trainer.main_ppo" in printed and f"--config-path={tmp_path / 'verl'}" in printed
    composed = _compose(tmp_path / "verl")
    validate_config(
        config=composed,
        use_reference_policy=need_reference_policy(composed),
        use_critic=need_critic(composed),
    )
    actor = omega_conf_to_dataclass(composed.actor_rollout_ref.actor)
    rollout = omega_conf_to_dataclass(composed.actor_rollout_ref.rollout)
    algo = omega_conf_to_dataclass(composed.algorithm)
    assert (
        type(actor).__name__ == "FSDPActorConfig"
        and actor.clip_ratio == 0.2
        and actor.loss_agg_mode == "token-mean"
    )
    assert actor.use_kl_loss and actor.kl_loss_coef == 0.01 and actor.kl_loss_type == "low_var_kl"
    assert actor.optim.lr == 2e-6
    assert (
        rollout.n == 8
        and rollout.temperature == 0.7
        and rollout.agent.default_agent_loop == "paravt_agent"
    )
    assert algo.adv_estimator == "grpo" and algo.norm_adv_by_std_in_grpo is True
    assert composed.trainer.nnodes == 2 and composed.trainer.use_v1 is True
    # the agent-loop registry file instantiates our loop with the resolved TrainConfig
    (entry,) = yaml.safe_load(Path(rollout.agent.agent_loop_config_path).read_text())
    assert entry["name"] == "paravt_agent" and entry["_target_"].endswith(
        "agent_loop.ParavtAgentLoop"
    )
    assert Path(entry["paravt_config"]).is_file()


def test_ablation_knobs_map_to_verl_names() -> None:
    cfg = TrainConfig()
    cfg.rl.std_normalize, cfg.rl.kl_estimator, cfg.rl.kl_coef, cfg.rl.group_size = (
        False,
        "k1",
        0.0,
        4,
    )
    cfg.verl = VerlConfig(rollout_backend="sglang")
    out = render_verl_config(cfg, run_dir="/tmp/x")
    actor, rollout = out["actor_rollout_ref"]["actor"], out["actor_rollout_ref"]["rollout"]
    assert out["algorithm"]["norm_adv_by_std_in_grpo"] is False
    assert actor["kl_loss_type"] == "k1" and actor["use_kl_loss"] is False
    assert rollout["n"] == 4 and rollout["name"] == "sglang"


def test_episode_longer_than_a_verl_row_is_a_config_error(tmp_path: Path) -> None:
    cfg = TrainConfig(out_dir=str(tmp_path))
    cfg.rollout.max_context_tokens = 20000
    with pytest.raises(ConfigError, match="max_context_tokens=20000"):
        launch_verl(
            cfg.model_copy(update={"verl": VerlConfig(prompt_length=8192, response_length=8192)}),
            dry_run=True,
        )


def test_the_kl_as_a_per_token_reward_is_refused_for_a_verl_run(tmp_path: Path, capsys) -> None:
    cfg = TrainConfig(out_dir=str(tmp_path))
    assert cfg.rl.kl_in == "reward" and cfg.rl.kl_coef > 0
    with pytest.raises(ConfigError, match="rl.kl_in=reward .* set rl.kl_in=loss"):
        launch_verl(cfg, dry_run=True)
    cfg.rl.kl_in, cfg.rl.kl_estimator = "loss", "k3"
    assert launch_verl(cfg, dry_run=True) == 0
    assert "kl_loss_type: low_var_kl" in capsys.readouterr().out


def test_unknown_verl_key_names_the_field(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("verl:\n  n_gpu: 4\n")
    with pytest.raises(ConfigError, match="verl.n_gpu"):
        load(p)


def test_write_run_files_without_data_still_renders(tmp_path: Path) -> None:
    files, rendered = write_run_files(TrainConfig(out_dir=str(tmp_path)), convert_data=False)
    assert yaml.safe_load(files["verl_config"].read_text()) == rendered
