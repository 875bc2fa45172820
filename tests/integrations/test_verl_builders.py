"""The verl engine builds from the same config as the local one (issue 32): the same optimiser
(verl's own ``build_optimizer`` on the rendered, composed and validated actor config vs the local
session's AdamW), the same tools (the agent loop calls `paravt.agent.backend.open_tools` with the
whole rollout section) and the same gating branch (`paravt.rl.gating.overview_budget`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("verl", reason="verl is not installed (pip install -e '.[verl]')")

import paravt.integrations.verl.agent_loop as paravt_loop  # noqa: E402
from paravt.agent import EpisodeInput  # noqa: E402
from paravt.cli.train_verl import write_run_files  # noqa: E402
from paravt.config import TrainConfig, save  # noqa: E402
from paravt.rl.gating import overview_budget  # noqa: E402
from paravt.rl.grpo import GRPOTrainer  # noqa: E402
from paravt.rl.session import adamw  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1]))
from changed_config import OPTIM, changed_config  # noqa: E402


def _verl_actor(cfg: TrainConfig, tmp_path: Path) -> Any:
    from hydra import compose, initialize_config_dir
    from verl.utils.config import omega_conf_to_dataclass

    cfg = cfg.model_copy(update={"out_dir": str(tmp_path / "run")})
    files, _ = write_run_files(cfg, convert_data=False)
    with initialize_config_dir(config_dir=str(files["dir"]), version_base=None):
        composed = compose(config_name="paravt_verl")
    return omega_conf_to_dataclass(composed.actor_rollout_ref.actor)


def test_both_engines_build_the_same_optimiser(tmp_path: Path) -> None:
    from verl.workers.config.optimizer import build_optimizer

    cfg = changed_config(tmp_path)
    actor = _verl_actor(cfg, tmp_path)
    ours = adamw(torch.nn.Linear(2, 2).parameters(), cfg.rl).param_groups[0]
    theirs_opt = build_optimizer(torch.nn.Linear(2, 2).parameters(), actor.optim)
    theirs = theirs_opt.param_groups[0]
    assert type(theirs_opt) is torch.optim.AdamW
    keys = ("lr", "weight_decay", "betas", "eps", "amsgrad")
    assert {k: theirs[k] for k in keys} == {k: ours[k] for k in keys}
    want = OPTIM["rl"]
    assert (ours["lr"], ours["weight_decay"], ours["betas"]) == (
        want["lr"],
        want["weight_decay"],
        want["adam_betas"],
    )


@pytest.fixture
def agent_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A ParavtAgentLoop on the changed config, verl's own constructor and the tools stubbed."""
    opened: list[Any] = []
    monkeypatch.setattr(
        paravt_loop.AgentLoopBase,
        "__init__",
        lambda self, *a, **kw: setattr(self, "processor", None),
    )
    monkeypatch.setattr(paravt_loop, "ChatCodec", lambda processor: "codec")
    monkeypatch.setattr(
        paravt_loop, "open_tools", lambda rollout: opened.append(rollout) or "toolset"
    )
    paravt_loop._toolset.cache_clear()

    def make(cfg: TrainConfig) -> Any:
        path = tmp_path / f"c{len(opened)}.yaml"
        save(cfg, path)
        paravt_loop._load_config.cache_clear()
        return paravt_loop.ParavtAgentLoop(paravt_config=str(path), steps_per_epoch=3)

    yield make, opened
    paravt_loop._toolset.cache_clear()
    paravt_loop._load_config.cache_clear()


def test_the_agent_loop_builds_its_tools_from_the_whole_rollout_section(
    agent_loop, tmp_path: Path
) -> None:
    make, opened = agent_loop
    cfg = changed_config(tmp_path)
    loop = make(cfg)
    assert loop.tools == "toolset" and opened == [cfg.rollout]


@pytest.mark.parametrize("gating", [True, False])
def test_the_agent_loop_and_the_local_trainer_gate_alike(
    gating: bool, agent_loop, tmp_path: Path
) -> None:
    make, _ = agent_loop
    cfg = changed_config(tmp_path)
    cfg.rl.gating.enabled, cfg.rl.gating.choices, cfg.video.overview_nframes = (
        gating,
        [4, 8, 16, 32, 64],
        6,
    )
    loop = make(cfg)
    local = GRPOTrainer.__new__(GRPOTrainer)  # only _expand's inputs: the config and the prompts
    local.cfg = cfg
    extra = {"id": "p7", "video": "v.mp4", "question": "q", "task": "oe", "answer": "a"}
    local.prompts = [EpisodeInput("p7", "v.mp4", "q", "oe", "a")]
    for global_steps in (1, 4, 7, 10):  # 3 steps per epoch: epochs 0..3
        epoch = (global_steps - 1) // 3
        inputs, _ = local._expand([(0, epoch)])
        n = loop.episode_input(dict(extra), global_steps).nframes
        assert n == inputs[0].nframes == overview_budget(cfg, epoch, "p7")
        assert n in cfg.rl.gating.choices if gating else n == 6
