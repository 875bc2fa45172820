"""``paravt train rl --engine verl``: write the verl run files and start ``verl.trainer.main_ppo``.

Files (in ``<out_dir>/verl/``): ``train_config.yaml`` (our resolved TrainConfig, read by every
agent-loop worker), ``agent_loop.yaml`` (verl's agent-loop registry entry for ``paravt_agent``),
``train.parquet`` (our rl.parquet in verl's layout) and ``paravt_verl.yaml`` (the Hydra config
on top of verl's ``ppo_trainer`` defaults). Multi-node runs need ``out_dir`` and the videos on a
filesystem every node sees (docs/scale.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from paravt.config import TrainConfig, VerlConfig, dump
from paravt.errors import ConfigError
from paravt.integrations.verl.render import (
    AGENT_NAME,
    CONFIG_NAME,
    render_agent_loop_config,
    render_verl_config,
    run_files,
    tracker_env,
)
from paravt.tracking import require_all

__all__ = ["launch_verl", "render_verl_config", "verl_command", "write_run_files"]


def verl_command(run_dir: str | Path, verl: VerlConfig) -> list[str]:
    files = run_files(run_dir)
    return [
        sys.executable,
        "-m",
        "verl.trainer.main_ppo",
        f"--config-path={files['dir']}",
        f"--config-name={CONFIG_NAME}",
        *verl.extra_overrides,
    ]


def _check(cfg: TrainConfig, verl: VerlConfig) -> None:
    require_all(
        cfg.logging.loggers
    )  # a tracker verl would import, missing: one line, before any work
    budget = verl.prompt_length + verl.response_length
    if cfg.rollout.max_context_tokens > budget:
        raise ConfigError(
            f"rollout.max_context_tokens={cfg.rollout.max_context_tokens} exceeds "
            "verl.prompt_length + "
            f"verl.response_length = {budget}: a full episode would not fit verl's row; raise "
            "the verl "
            "lengths or lower rollout.max_context_tokens"
        )
    if cfg.rl.kl_in == "reward" and cfg.rl.kl_coef > 0:
        raise ConfigError(
            "rl.kl_in=reward (the KL as a per-token reward added to the advantage) has no verl "
            "0.9 counterpart (its use_kl_in_reward sums the KL into the score before the group "
            "normalisation); set rl.kl_in=loss (with rl.kl_estimator=k3: verl's low_var_kl) or "
            "rl.kl_coef=0 for a verl run"
        )
    if verl.train_batch_size % verl.ppo_mini_batch_size:
        raise ConfigError(
            f"verl.train_batch_size={verl.train_batch_size} must be a multiple of "
            "verl.ppo_mini_batch_size="
            f"{verl.ppo_mini_batch_size}"
        )


def _steps_per_epoch(cfg: TrainConfig, verl: VerlConfig, n_rows: int | None) -> VerlConfig:
    if n_rows is None:
        return verl
    steps = max(1, n_rows // verl.train_batch_size)
    return verl.model_copy(update={"steps_per_epoch": steps})


def write_run_files(
    cfg: TrainConfig, *, convert_data: bool
) -> tuple[dict[str, Path], dict[str, Any]]:
    """Write every run file; returns the paths and the rendered Hydra config."""
    from paravt.integrations.verl.data import write_verl_parquet

    run_dir = Path(cfg.out_dir) / "verl"
    files = run_files(run_dir)
    files["dir"].mkdir(parents=True, exist_ok=True)
    n_rows = None
    if convert_data:
        n_rows = write_verl_parquet(
            cfg.data,
            files["train_data"],
            agent_name=AGENT_NAME,
            data_root=cfg.data_root,
            think_prefix=cfg.rollout.think_prefix,
            max_row_bytes=cfg.max_row_bytes,
        )
    verl = _steps_per_epoch(cfg, cfg.verl, n_rows)
    cfg = cfg.model_copy(update={"verl": verl})
    rendered = render_verl_config(cfg, run_dir=run_dir)
    files["train_config"].write_text(dump(cfg))
    files["agent_loop"].write_text(
        yaml.safe_dump(render_agent_loop_config(cfg, verl, run_dir), sort_keys=False)
    )
    files["verl_config"].write_text(yaml.safe_dump(rendered, sort_keys=False))
    return files, rendered


def resolved_yaml(config_dir: Path) -> str:
    """verl's full config (its defaults + ours) as YAML, or our layer alone without verl."""
    try:
        from hydra import compose, initialize_config_dir
        from omegaconf import OmegaConf
    except ImportError:
        return (config_dir / f"{CONFIG_NAME}.yaml").read_text()
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        composed = compose(config_name=CONFIG_NAME)
    return OmegaConf.to_yaml(composed)


def launch_verl(cfg: TrainConfig, *, dry_run: bool) -> int:
    """Write the run files; dry run: print the resolved config and the command, return 0;
    otherwise run ``python -m verl.trainer.main_ppo`` and return its exit code. The cluster and
    engine knobs are ``cfg.verl``."""
    _check(cfg, cfg.verl)
    files, _ = write_run_files(cfg, convert_data=not dry_run)
    cmd = verl_command(files["dir"], cfg.verl)
    env = tracker_env(cfg, files["dir"])
    if dry_run:
        print(resolved_yaml(files["dir"]))
        print("# command:")
        print(" ".join([*(f"{k}={v}" for k, v in env.items()), *cmd]))
        return 0
    return subprocess.run(cmd, check=False, env={**os.environ, **env}).returncode
