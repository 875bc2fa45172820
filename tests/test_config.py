from pathlib import Path

import pytest

from paravt import config as cfgmod
from paravt.errors import ConfigError


def test_defaults_are_the_papers() -> None:
    cfg = cfgmod.TrainConfig()
    assert cfg.reward.lambda_fmt == 1.0 and cfg.reward.lambda_anchor == 0.5
    assert (cfg.reward.alpha, cfg.reward.beta, cfg.reward.gamma) == (0.4, 0.3, 0.3)
    assert cfg.reward.bias == -0.2
    assert cfg.rl.group_size == 8 and cfg.rl.clip_eps == 0.2 and cfg.rl.kl_coef == 0.01
    assert cfg.rl.lr == 2e-6 and cfg.sampling.temperature == 0.7
    assert cfg.rl.gating.choices == [4, 8, 16, 32, 64]


def test_yaml_round_trip(tmp_path: Path) -> None:
    cfg = cfgmod.TrainConfig()
    cfg.rl.kl_coef = 0.05
    cfgmod.save(cfg, tmp_path / "c.yaml")
    assert cfgmod.load(tmp_path / "c.yaml") == cfg


def test_every_bad_field_is_named(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("rl:\n  group_size: 1\n  clip_eps: -1\nrollout:\n  modee: x\n")
    with pytest.raises(ConfigError) as info:
        cfgmod.load(tmp_path / "c.yaml")
    msg = str(info.value)
    assert "rl.group_size" in msg and "rl.clip_eps" in msg and "rollout.modee" in msg


def test_overrides_apply_and_validate(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("rl:\n  steps: 3\n")
    cfg = cfgmod.load(tmp_path / "c.yaml", overrides=["rl.kl_coef=0.1", "rollout.mode=sequential"])
    assert cfg.rl.kl_coef == 0.1 and cfg.rollout.mode == "sequential" and cfg.rl.steps == 3
    with pytest.raises(ConfigError, match="rollout.mode"):
        cfgmod.load(tmp_path / "c.yaml", overrides=["rollout.mode=fast"])


@pytest.mark.parametrize("name", ["tiny_sft", "tiny_paragrpo", "tiny_vanilla_grpo", "qwen3vl_8b_paragrpo"])
def test_shipped_configs_load(name: str) -> None:
    cfgmod.load(Path(__file__).parents[1] / "configs" / f"{name}.yaml")


def test_tiny_configs_are_what_the_demo_runs() -> None:
    """configs/tiny_*.yaml = the `paravt demo` stages (the repro ``demo`` preset and its variants)."""
    from paravt.repro.run import PRESETS, base_config
    from paravt.repro.variants import VARIANTS, with_overrides

    root = Path(__file__).parents[1] / "configs"
    base = base_config(Path("runs/demo"), PRESETS["demo"])
    para, vanilla = (with_overrides(base, VARIANTS[v].overrides) for v in ("paragrpo", "vanilla_grpo"))
    shipped = {n: cfgmod.load(root / f"tiny_{n}.yaml") for n in ("prior", "sft", "paragrpo", "vanilla_grpo")}
    for cfg in shipped.values():
        assert cfg.video == base.video and cfg.sampling == base.sampling and cfg.sft == base.sft
        assert cfg.prior == base.prior and cfg.eval == base.eval
    for name, want in (("paragrpo", para), ("vanilla_grpo", vanilla)):
        got = shipped[name]
        assert (got.rl, got.reward, got.rollout) == (want.rl, want.reward, want.rollout), name
        assert got.model.replicas == want.model.replicas == 2, name  # the rollouts use both cores
    # vanilla GRPO = PARA-GRPO minus the think prefix, the anchor reward and nFrames Gating
    assert not vanilla.rollout.think_prefix and not vanilla.reward.anchor and not vanilla.rl.gating.enabled


def test_lower_layer_defaults_are_the_configs() -> None:
    """Each default is written once (paravt/config.py); the plain dataclasses below the CLI read it."""
    from paravt.agent import EpisodeSettings
    from paravt.config import GatingConfig, TrainConfig
    from paravt.data.schema import OVERVIEW_NS
    from paravt.rewards import RewardWeights

    assert EpisodeSettings() == EpisodeSettings.from_config(TrainConfig())
    assert RewardWeights.default() == RewardWeights.from_config(TrainConfig().reward)
    assert OVERVIEW_NS == tuple(GatingConfig().choices)


def test_prefill_threads_is_validated_and_reaches_the_hf_generator(tmp_path: Path, tiny_qwen3_dir: str) -> None:
    """model.prefill_threads (issue 14.4) is checked like every field and handed to the hf generator of
    eval (open_backend) and of training (PolicySession); None leaves the thread count alone."""
    import inspect

    from paravt.eval.runner import open_backend
    from paravt.models.hf.generator import HFGenerator
    from paravt.rl.session import PolicySession

    (tmp_path / "c.yaml").write_text("model:\n  prefill_threads: 0\n")
    with pytest.raises(ConfigError, match="model.prefill_threads"):
        cfgmod.load(tmp_path / "c.yaml")
    assert inspect.signature(HFGenerator).parameters["prefill_threads"].default is cfgmod.ModelConfig().prefill_threads
    cfg = cfgmod.load(tmp_path / "c.yaml", overrides=["model.prefill_threads=2"])
    assert cfg.model.prefill_threads == 2
    backend = open_backend(tiny_qwen3_dir, prefill_threads=cfg.model.prefill_threads)
    session = PolicySession.create(tiny_qwen3_dir, lr=1e-3, generate=True, prefill_threads=cfg.model.prefill_threads)
    assert backend.generator.prefill_threads == session.generator.prefill_threads == 2
    assert open_backend(tiny_qwen3_dir).generator.prefill_threads is None


def test_replicas_is_validated_and_reaches_the_hf_generator(tmp_path: Path, tiny_qwen3_dir: str) -> None:
    """model.replicas (issue 14.4) is checked like every field; above 1, eval (open_backend) and
    training (PolicySession) get a ReplicaGenerator with that many engines; 1 is one HFGenerator."""
    from paravt.eval.runner import open_backend
    from paravt.models.hf.generator import HFGenerator
    from paravt.models.hf.replicas import ReplicaGenerator
    from paravt.rl.session import PolicySession

    (tmp_path / "c.yaml").write_text("model:\n  replicas: 0\n")
    with pytest.raises(ConfigError, match="model.replicas"):
        cfgmod.load(tmp_path / "c.yaml")
    cfg = cfgmod.load(tmp_path / "c.yaml", overrides=["model.replicas=2"])
    backend = open_backend(tiny_qwen3_dir, replicas=cfg.model.replicas)
    session = PolicySession.create(tiny_qwen3_dir, lr=1e-3, generate=True, replicas=cfg.model.replicas)
    try:
        assert isinstance(backend.generator, ReplicaGenerator) and isinstance(session.generator, ReplicaGenerator)
        assert backend.generator.replicas == session.generator.replicas == 2
        assert session.generator.model is session.model  # the replica syncs the weights being trained
    finally:
        backend.generator.close()
        session.generator.close()
    assert isinstance(open_backend(tiny_qwen3_dir).generator, HFGenerator)
    assert cfgmod.ModelConfig().replicas == 1
