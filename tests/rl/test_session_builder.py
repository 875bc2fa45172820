"""The ONE session builder (``PolicySession.create``, issue 32): the policy from ``ModelConfig``,
its optimiser from the trainer's section (lr, weight_decay, adam_betas), its generator and tools
from the backend builder; and the training loop hands it every field of each trainer's config
(rl, sft, prior), all changed from their defaults (tests/changed_config.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from paravt.config import TrainConfig
from paravt.errors import ConfigError
from paravt.rl import loop
from paravt.rl.registry import TRAINERS
from paravt.rl.session import PolicySession

sys.path.insert(0, str(Path(__file__).parents[1]))
from changed_config import OPTIM, changed_config  # noqa: E402


def _hf(tmp_path: Path) -> TrainConfig:
    cfg = changed_config(tmp_path)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir(exist_ok=True)
    return cfg.model_copy(
        update={"model": cfg.model.model_copy(update={"path": str(ckpt), "backend": "hf"})}
    )


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    got: dict[str, Any] = {"load_policy": []}

    def load_policy(path: str, **kw: Any) -> Any:
        got["load_policy"].append({"path": path, **kw})
        return SimpleNamespace(model=torch.nn.Linear(2, 2), processor="processor")

    def spy(name: str, result: Any):
        def f(*args: Any, **kw: Any) -> Any:
            got[name] = {"args": args, **kw}
            return result

        return f

    monkeypatch.setattr("paravt.rl.session.load_policy", load_policy)
    monkeypatch.setattr("paravt.rl.session.ChatCodec", spy("codec", "codec"))
    monkeypatch.setattr("paravt.models.hf.replicas.hf_generator", spy("hf_generator", "gen"))
    monkeypatch.setattr("paravt.tools.build_toolset", spy("tools", "toolset"))
    return got


@pytest.mark.parametrize("section", ["rl", "sft", "prior"])
def test_the_optimiser_gets_the_sections_lr_weight_decay_and_betas(
    section: str, tmp_path: Path, loads
) -> None:
    cfg = _hf(tmp_path)
    s = PolicySession.create(cfg.model, getattr(cfg, section))
    (group,) = s.optimizer.param_groups
    want = OPTIM[section]
    assert type(s.optimizer) is torch.optim.AdamW
    assert (group["lr"], group["weight_decay"], group["betas"]) == (
        want["lr"],
        want["weight_decay"],
        want["adam_betas"],
    )
    assert s.generator is None and s.tools is None  # no rollout section: a supervised trainer


def test_the_policy_generator_and_tools_get_every_field(tmp_path: Path, loads) -> None:
    cfg = _hf(tmp_path)
    m, r = cfg.model, cfg.rollout
    s = PolicySession.create(m, cfg.rl, rollout=r, path=str(tmp_path / "resume"), reference=m.path)
    assert loads["load_policy"] == [
        {"path": str(tmp_path / "resume"), "device": m.device, "dtype": m.dtype},
        {"path": m.path, "device": m.device, "dtype": m.dtype},
    ]  # policy, reference
    g = loads["hf_generator"]
    assert (g["replicas"], g["prefill_threads"], g["replica_timeout_s"], g["continuous"]) == (
        m.replicas,
        m.prefill_threads,
        m.replica_timeout_s,
        m.continuous_batching,
    )
    t = loads["tools"]
    assert (list(t["args"][0]), t["server_url"], t["server_key_file"]) == (
        r.tools,
        r.tool_server_url,
        r.tool_server_key_file,
    )
    assert t["options"] == {"python": {"weak_isolation": True}}  # rollout.python_weak_isolation
    assert (s.generator, s.tools) == ("gen", "toolset") and not any(
        p.requires_grad for p in s.ref_model.parameters()
    )


def test_a_server_url_cannot_be_trained(tmp_path: Path) -> None:
    cfg = changed_config(tmp_path)  # model.path is a URL (openai backend)
    with pytest.raises(ConfigError, match="training loads a checkpoint"):
        PolicySession.create(cfg.model, cfg.rl)


class Stop(Exception):
    pass


@pytest.mark.parametrize(("kind", "section"), [("rl", "rl"), ("sft", "sft"), ("prior", "prior")])
def test_the_training_loop_hands_the_builder_every_field(
    kind: str, section: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    got: dict[str, Any] = {}

    def create(model: Any, optim: Any, **kw: Any) -> Any:
        got.update(model=model, optim=optim, **kw)
        raise Stop

    monkeypatch.setattr(TRAINERS[kind], "check_data", classmethod(lambda cls, cfg: None))
    monkeypatch.setattr(PolicySession, "create", create)
    cfg = _hf(tmp_path)
    with pytest.raises(Stop):
        loop.run_training(cfg, kind=kind, progress=False)
    assert got["model"] == cfg.model and got["optim"] == getattr(cfg, section)
    assert got["rollout"] == (cfg.rollout if kind == "rl" else None)
    assert got["path"] == cfg.model.path
