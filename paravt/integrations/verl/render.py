"""``TrainConfig`` → verl 0.9 Hydra config (PARA-GRPO knobs mapped onto verl's names).

The rendered config is a small YAML layered on verl's own ``ppo_trainer`` defaults
(``defaults: [ppo_trainer, _self_]`` with verl's config package on the search path), so every
value not listed here keeps verl's default and ``verl.trainer.main_ppo`` validates the result.

Mapping (ours → verl):

| paravt | verl |
|---|---|
| rl.group_size | actor_rollout_ref.rollout.n |
| rl.std_normalize | algorithm.norm_adv_by_std_in_grpo (adv_estimator = grpo) |
| rl.clip_eps | actor.clip_ratio (= clip_ratio_low = _high); dual clip off (clip_ratio_c 1e9) |
| rl.kl_coef, kl_estimator k3/k1 (kl_in loss) | actor.use_kl_loss, kl_loss_coef, kl_loss_type |
| rl.reward_clip | the agent loop clips the row's reward_score (``agent_loop.clipped_score``) |
| token-mean loss | actor.loss_agg_mode = token-mean |
| rl.lr, max_grad_norm, ppo_epochs | actor.optim.lr, actor.grad_clip, actor.ppo_epochs |
| rl.weight_decay, adam_betas | actor.optim.weight_decay, betas (torch.optim's AdamW, as locally) |
| sampling.temperature, top_p | rollout.temperature, rollout.top_p |
| rollout.max_turns + 1, k_max | rollout.multi_turn.max_assistant_turns, max_parallel_calls |
| everything the Episode needs | the agent-loop YAML → ``ParavtAgentLoop(paravt_config=...)`` |

Not mapped: the online filters (``rl.drop_zero_variance``, ``rl.oversample``): a zero-variance
group already gets zero GRPO advantage in verl, so dropping it only changes the token-mean
denominator; the reward ``bias`` is a no-op under std normalisation (docs/ARCHITECTURE.md §4),
and so is ``rl.reward_scale``. ``rl.adv_norm: batch`` (the release's batch normalisation after the
group step, over tokens or episodes: ``rl.adv_norm_unit``) has no verl 0.9 switch: a verl run
normalises per group only (docs/fidelity.md). Not supported: ``rl.kl_in: reward`` (the release's
per-token KL return added to the advantage): verl's ``algorithm.use_kl_in_reward`` sums the KL
into the sequence score BEFORE the GRPO group normalisation, another estimator, so
``paravt train rl --engine verl`` refuses it (``paravt.cli.train_verl``) and a verl run sets
``rl.kl_in: loss`` (configs/qwen3vl_8b_paragrpo.yaml).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paravt.config import RLConfig, TrainConfig, VerlConfig

AGENT_NAME = "paravt_agent"
AGENT_LOOP_TARGET = "paravt.integrations.verl.agent_loop.ParavtAgentLoop"
CONFIG_NAME = "paravt_verl"
VERL_CONFIG_SEARCHPATH = "pkg://verl.trainer.config"
KL_TYPES = {"k3": "low_var_kl", "k1": "k1"}
#: verl's vanilla loss adds dual-clip PPO (loss capped at -3·A for A < 0); ours has none
#: (paravt.rl.loss), so it is pushed out of reach and both engines optimise the same objective.
DUAL_CLIP_OFF = 1.0e9


#: ``logging.loggers`` → verl's ``trainer.logger`` names (the ONE logger list of both trainers);
#: our always-on ``jsonl`` is verl's ``file`` logger.
VERL_LOGGERS = {
    "console": "console",
    "jsonl": "file",
    "tensorboard": "tensorboard",
    "wandb": "wandb",
    "mlflow": "mlflow",
}


def verl_loggers(loggers: Sequence[str]) -> list[str]:
    """verl's ``trainer.logger`` for ``logging.loggers``; ``file`` (the JSONL) always."""
    return list(dict.fromkeys([*(VERL_LOGGERS[x] for x in loggers), "file"]))


def tracker_env(cfg: TrainConfig, run_dir: str | Path) -> dict[str, str]:
    """The environment of the verl process for its trackers, from ``logging`` (verl's
    ``verl.utils.tracking`` reads their settings only from there; paravt itself reads none): every
    tracker writes under ``run_dir`` unless ``logging.mlflow_tracking_uri`` points elsewhere."""
    lg, d = cfg.logging, run_files(run_dir)["dir"]
    env = {"VERL_FILE_LOGGER_PATH": str(d / "verl_log.jsonl")}
    if "tensorboard" in lg.loggers:
        env["TENSORBOARD_DIR"] = str(d / "tb")
    if "wandb" in lg.loggers:
        env |= {"WANDB_MODE": lg.wandb_mode, "WANDB_DIR": str(d)}
        env |= {"WANDB_RUN_GROUP": lg.group} if lg.group else {}
        env |= {"WANDB_ENTITY": lg.wandb_entity} if lg.wandb_entity else {}
    if "mlflow" in lg.loggers:
        env["MLFLOW_TRACKING_URI"] = (
            lg.mlflow_tracking_uri or f"sqlite:///{d / 'mlruns' / 'mlflow.db'}"
        )
    return env


def reward_module_path() -> str:
    """Absolute path of the reward-function file verl imports by path."""
    return str(Path(__file__).with_name("reward.py").resolve())


def run_files(run_dir: str | Path) -> dict[str, Path]:
    """Files ``launch_verl`` writes into ``run_dir`` (the config references them)."""
    d = Path(run_dir).resolve()
    return {
        "dir": d,
        "verl_config": d / f"{CONFIG_NAME}.yaml",
        "agent_loop": d / "agent_loop.yaml",
        "train_config": d / "train_config.yaml",
        "train_data": d / "train.parquet",
        "checkpoints": d / "checkpoints",
    }


def render_agent_loop_config(
    cfg: TrainConfig, verl: VerlConfig, run_dir: str | Path
) -> list[dict[str, Any]]:
    """verl's agent-loop registry file: one entry instantiating our loop with its settings."""
    files = run_files(run_dir)
    return [
        {
            "name": AGENT_NAME,
            "_target_": AGENT_LOOP_TARGET,
            "paravt_config": str(files["train_config"]),
            "steps_per_epoch": verl.steps_per_epoch,
        }
    ]


def optimiser(rl: RLConfig) -> dict[str, Any]:
    """actor.optim: the local trainer's optimiser (paravt.rl.session: torch.optim.AdamW with these
    settings); verl's own defaults (weight decay 0.01) are never used."""
    return {
        "optimizer": "AdamW",
        "optimizer_impl": "torch.optim",
        "lr": rl.lr,
        "weight_decay": rl.weight_decay,
        "betas": list(rl.adam_betas),
    }


def _actor(cfg: TrainConfig, verl: VerlConfig) -> dict[str, Any]:
    rl = cfg.rl
    return {
        "optim": optimiser(rl),
        "ppo_mini_batch_size": verl.ppo_mini_batch_size,
        "ppo_micro_batch_size_per_gpu": verl.micro_batch_size_per_gpu,
        "use_dynamic_bsz": verl.use_dynamic_bsz,
        "ppo_max_token_len_per_gpu": verl.max_token_len_per_gpu,
        "ppo_epochs": rl.ppo_epochs,
        "clip_ratio": rl.clip_eps,
        "clip_ratio_low": rl.clip_eps,
        "clip_ratio_high": rl.clip_eps,
        "clip_ratio_c": DUAL_CLIP_OFF,
        "loss_agg_mode": "token-mean",
        "entropy_coeff": 0.0,
        "use_kl_loss": rl.kl_coef > 0,
        "kl_loss_coef": rl.kl_coef,
        "kl_loss_type": KL_TYPES[rl.kl_estimator],
        "grad_clip": rl.max_grad_norm,
        "fsdp_config": {
            "param_offload": verl.param_offload,
            "optimizer_offload": verl.optimizer_offload,
        },
    }


def _rollout(cfg: TrainConfig, verl: VerlConfig, run_dir: str | Path) -> dict[str, Any]:
    r, s = cfg.rollout, cfg.sampling
    return {
        "name": verl.rollout_backend,
        "mode": "async",
        "n": cfg.rl.group_size,
        "temperature": s.temperature,
        "top_p": s.top_p,
        "prompt_length": verl.prompt_length,
        "response_length": verl.response_length,
        "tensor_model_parallel_size": verl.tensor_parallel_size,
        "gpu_memory_utilization": verl.gpu_memory_utilization,
        "max_num_batched_tokens": verl.max_num_batched_tokens,
        "max_num_seqs": verl.max_num_seqs,
        "log_prob_micro_batch_size_per_gpu": verl.micro_batch_size_per_gpu,
        "calculate_log_probs": True,
        "multi_turn": {
            "enable": True,
            "max_assistant_turns": r.max_turns + 1,  # generations (rollout.max_turns: tool rounds)
            "max_parallel_calls": r.k_max,
        },
        "agent": {
            "default_agent_loop": AGENT_NAME,
            "agent_loop_config_path": str(run_files(run_dir)["agent_loop"]),
            "num_workers": verl.agent_workers,
        },
        "val_kwargs": {
            "temperature": cfg.eval.temperature,
            "n": 1,
            "do_sample": cfg.eval.temperature > 0,
        },
    }


def render_verl_config(cfg: TrainConfig, *, run_dir: str | Path | None = None) -> dict[str, Any]:
    """The Hydra config (a dict) that ``launch_verl`` writes as ``paravt_verl.yaml``; the cluster
    and engine knobs come from ``cfg.verl`` (the one source)."""
    verl = cfg.verl
    run_dir = run_dir if run_dir is not None else Path(cfg.out_dir) / "verl"
    files = run_files(run_dir)
    model_path = cfg.init_from or cfg.model.path
    return {
        "hydra": {"searchpath": [VERL_CONFIG_SEARCHPATH]},
        "defaults": ["ppo_trainer", "_self_"],
        "data": {
            "train_files": str(files["train_data"]),
            "val_files": verl.val_data or str(files["train_data"]),
            "prompt_key": "prompt",
            "max_prompt_length": verl.prompt_length,
            "max_response_length": verl.response_length,
            "train_batch_size": verl.train_batch_size,
            "return_raw_chat": True,
            "filter_overlong_prompts": False,
            "shuffle": True,
            "seed": cfg.rl.seed,
            "dataloader_num_workers": 2,
        },
        "actor_rollout_ref": {
            "model": {
                "path": model_path,
                "enable_gradient_checkpointing": verl.gradient_checkpointing,
                "use_remove_padding": True,
            },
            "actor": _actor(cfg, verl),
            "ref": {"log_prob_micro_batch_size_per_gpu": verl.micro_batch_size_per_gpu},
            "rollout": _rollout(cfg, verl, run_dir),
        },
        "algorithm": {
            "adv_estimator": "grpo",
            "norm_adv_by_std_in_grpo": cfg.rl.std_normalize,
            "use_kl_in_reward": False,
            "gamma": 1.0,
            "lam": 1.0,
        },
        "reward": {
            "custom_reward_function": {"path": reward_module_path(), "name": "compute_score"}
        },
        "trainer": {
            "use_v1": True,
            "nnodes": verl.nnodes,
            "n_gpus_per_node": verl.n_gpus_per_node,
            "total_epochs": verl.total_epochs,
            "total_training_steps": cfg.rl.steps,
            "project_name": cfg.logging.project,
            "experiment_name": cfg.logging.run_name or Path(cfg.out_dir).name,
            "logger": verl_loggers(cfg.logging.loggers),
            "save_freq": verl.save_freq,
            "test_freq": -1 if verl.val_data is None else cfg.rl.save_every,
            "val_before_train": verl.val_data is not None,
            "default_local_dir": str(files["checkpoints"]),
        },
    }
