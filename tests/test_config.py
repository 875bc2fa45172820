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


@pytest.mark.parametrize(
    "name", ["tiny_sft", "tiny_paragrpo", "tiny_vanilla_grpo", "qwen3vl_8b_paragrpo"]
)
def test_shipped_configs_load(name: str) -> None:
    cfgmod.load(Path(__file__).parents[1] / "configs" / f"{name}.yaml")


def test_tiny_configs_are_what_the_demo_runs() -> None:
    """configs/tiny_*.yaml = the `paravt demo` stages (the repro ``demo`` preset and its
    variants)."""
    from paravt.repro.presets import PRESETS, base_config
    from paravt.repro.variants import VARIANTS, with_overrides

    root = Path(__file__).parents[1] / "configs"
    base = base_config(Path("runs/demo"), PRESETS["demo"])
    para, vanilla = (
        with_overrides(base, VARIANTS[v].overrides) for v in ("paragrpo", "vanilla_grpo")
    )
    shipped = {
        n: cfgmod.load(root / f"tiny_{n}.yaml")
        for n in ("prior", "sft", "paragrpo", "vanilla_grpo")
    }
    want_of = {"prior": base, "sft": base, "paragrpo": para, "vanilla_grpo": vanilla}
    for (
        name,
        cfg,
    ) in shipped.items():  # every variant trains at the default overview budget (64) unless gated
        assert (
            cfg.video == want_of[name].video
            and cfg.sampling == base.sampling
            and cfg.sft == base.sft
        )
        assert cfg.prior == base.prior and cfg.eval == base.eval
    for name, want in (("paragrpo", para), ("vanilla_grpo", vanilla)):
        got = shipped[name]
        assert (got.rl, got.reward, got.rollout) == (want.rl, want.reward, want.rollout), name
        assert got.model.replicas == want.model.replicas == 2, name  # the rollouts use both cores
    # vanilla GRPO = PARA-GRPO minus the think prefix, the anchor reward and nFrames Gating
    assert (
        not vanilla.rollout.think_prefix
        and not vanilla.reward.anchor
        and not vanilla.rl.gating.enabled
    )


def test_lower_layer_defaults_are_the_configs() -> None:
    """Each default is written once (paravt/config/); the plain dataclasses below the CLI read
    it."""
    from paravt.agent import EpisodeSettings
    from paravt.config import GatingConfig, TrainConfig
    from paravt.data.rows import OVERVIEW_NS
    from paravt.rewards import RewardWeights

    assert EpisodeSettings() == EpisodeSettings.from_config(TrainConfig())
    assert RewardWeights.default() == RewardWeights.from_config(TrainConfig().reward)
    assert OVERVIEW_NS == tuple(GatingConfig().choices)


def test_prefill_threads_is_validated_and_reaches_the_hf_generator(
    tmp_path: Path, tiny_qwen3_dir: str
) -> None:
    """model.prefill_threads (issue 14.4) is checked like every field and handed to the hf generator
    of
    eval (open_backend) and of training (PolicySession); None leaves the thread count alone."""
    import inspect

    from paravt.agent.backend import open_backend
    from paravt.models.hf.generator import HFGenerator
    from paravt.rl.session import PolicySession

    (tmp_path / "c.yaml").write_text("model:\n  prefill_threads: 0\n")
    with pytest.raises(ConfigError, match="model.prefill_threads"):
        cfgmod.load(tmp_path / "c.yaml")
    assert (
        inspect.signature(HFGenerator).parameters["prefill_threads"].default
        is cfgmod.ModelConfig().prefill_threads
    )
    cfg = cfgmod.load(
        tmp_path / "c.yaml", overrides=["model.prefill_threads=2", f"model.path={tiny_qwen3_dir}"]
    )
    assert cfg.model.prefill_threads == 2
    backend = open_backend(cfg.model, cfg.rollout)
    session = PolicySession.create(cfg.model, cfg.rl, rollout=cfg.rollout)
    assert backend.generator.prefill_threads == session.generator.prefill_threads == 2
    assert (
        open_backend(cfgmod.ModelConfig(path=tiny_qwen3_dir), cfg.rollout).generator.prefill_threads
        is None
    )


def test_replicas_is_validated_and_reaches_the_hf_generator(
    tmp_path: Path, tiny_qwen3_dir: str
) -> None:
    """model.replicas (issue 14.4) is checked like every field; above 1, eval (open_backend) and
    training (PolicySession) get a ReplicaGenerator with that many engines; 1 is one HFGenerator."""
    from paravt.agent.backend import open_backend
    from paravt.models.hf.generator import HFGenerator
    from paravt.models.hf.replicas import ReplicaGenerator
    from paravt.rl.session import PolicySession

    (tmp_path / "c.yaml").write_text("model:\n  replicas: 0\n")
    with pytest.raises(ConfigError, match="model.replicas"):
        cfgmod.load(tmp_path / "c.yaml")
    cfg = cfgmod.load(
        tmp_path / "c.yaml", overrides=["model.replicas=2", f"model.path={tiny_qwen3_dir}"]
    )
    backend = open_backend(cfg.model, cfg.rollout)
    session = PolicySession.create(cfg.model, cfg.rl, rollout=cfg.rollout)
    try:
        assert isinstance(backend.generator, ReplicaGenerator) and isinstance(
            session.generator, ReplicaGenerator
        )
        assert backend.generator.replicas == session.generator.replicas == 2
        assert (
            session.generator.model is session.model
        )  # the replica syncs the weights being trained
    finally:
        backend.generator.close()
        session.generator.close()
    assert isinstance(
        open_backend(cfgmod.ModelConfig(path=tiny_qwen3_dir), cfg.rollout).generator, HFGenerator
    )
    assert cfgmod.ModelConfig().replicas == 1


# ---- cross-field checks (issue 25 item 4): each names the values and ends with the fix -----------
def _problems(overrides: list[str]) -> str:
    with pytest.raises(ConfigError) as info:
        cfgmod.load_for_model("/no/model", overrides=overrides)
    msg = str(info.value)
    assert "\n" not in msg  # one line
    return msg


def test_eva_without_frame_select_is_refused_and_fine_with_it() -> None:
    msg = _problems(["rollout.mode=eva"])
    assert (
        "rollout.mode" in msg
        and "['crop_video']" in msg
        and "frame_select" in msg
        and "--set" in msg
    )
    cfg, _ = cfgmod.load_for_model(
        "/no/model", overrides=["rollout.mode=eva", "rollout.tools=[frame_select]"]
    )
    assert cfg.rollout.mode == "eva"


def test_eva_asked_for_in_eval_modes_is_checked_but_the_default_eval_modes_are_not() -> None:
    assert "eval.modes uses 'eva'" in _problems(["eval.modes=[parallel, eva]"])
    # a config that never names eval.modes is not refused for what eval would do by default
    cfg, _ = cfgmod.load_for_model("/no/model", overrides=["rollout.mode=none", "rollout.tools=[]"])
    assert cfg.eval.modes == ["parallel"]


def test_a_tool_mode_with_no_tools_is_refused() -> None:
    msg = _problems(["rollout.tools=[]"])
    assert (
        "rollout.mode='parallel'" in msg
        and "rollout.tools is empty" in msg
        and "rollout.mode=none" in msg
    )


def test_gating_choices_above_the_overview_cap_are_refused() -> None:
    msg = _problems(["rl.gating.choices=[4, 1000]"])
    assert (
        "rl.gating.choices" in msg and "[1000]" in msg and f"1..{cfgmod.MAX_OVERVIEW_FRAMES}" in msg
    )
    assert "rl.gating.choices" in _problems(["rl.gating.choices=[]"])
    assert "[0]" in _problems(["rl.gating.choices=[0, 8]"])
    cfg, _ = cfgmod.load_for_model(
        "/no/model", overrides=[f"rl.gating.choices=[{cfgmod.MAX_OVERVIEW_FRAMES}]"]
    )
    assert cfg.rl.gating.choices == [cfgmod.MAX_OVERVIEW_FRAMES]


def test_replicas_on_an_accelerator_are_refused_before_a_model_loads() -> None:
    msg = _problems(["model.replicas=2", "model.device=cuda"])
    assert "model.replicas=2" in msg and "'cuda'" in msg and "set model.replicas=1" in msg


def test_an_empty_overview_without_tools_is_refused() -> None:
    msg = _problems(["video.overview_nframes=0", "rollout.mode=none"])
    assert "overview_nframes=0" in msg and "shows the model nothing" in msg


def test_a_judge_model_without_a_judge_url_and_urls_that_are_not_urls_are_refused() -> None:
    assert "reward.judge_model='m'" in _problems(["reward.judge_model=m"])
    msg = _problems(["reward.judge_url=localhost:8000"])
    assert "reward.judge_url" in msg and "'localhost:8000'" in msg and "http://" in msg
    assert "rollout.tool_server_url" in _problems(["rollout.tool_server_url=ftp://x"])
    with pytest.raises(ConfigError, match="--teacher 'not a url'"):
        cfgmod.check_url("not a url", "--teacher")
    assert cfgmod.check_url("http://127.0.0.1:8000/v1", "--teacher") == "http://127.0.0.1:8000/v1"


def test_every_problem_is_reported_at_once_on_one_line() -> None:
    msg = _problems(["rollout.mode=eva", "model.replicas=2", "model.device=cuda"])
    assert "frame_select" in msg and "model.replicas=2" in msg


# ---- flags and overrides: refused, never replaced ------------------------------------------------
def test_a_flag_out_of_range_is_refused_and_named_by_its_option() -> None:
    flags = [
        cfgmod.Flag("--workers", "eval.workers", 0),
        cfgmod.Flag("--limit", "eval.limit", -1),
        cfgmod.Flag("--nframes", "video.overview_nframes", None),
    ]  # None: not given
    with pytest.raises(ConfigError) as info:
        cfgmod.load_for_model("/no/model", flags=flags)
    msg = str(info.value)
    assert (
        "--workers (eval.workers)" in msg
        and "(got 0)" in msg
        and "--limit (eval.limit)" in msg
        and "(got -1)" in msg
    )
    cfg, _ = cfgmod.load_for_model(
        "/no/model",
        overrides=["eval.workers=2"],
        flags=[cfgmod.Flag("--workers", "eval.workers", 3)],
    )
    assert cfg.eval.workers == 3  # flags come after --set


def test_an_unknown_field_gets_the_close_names() -> None:
    with pytest.raises(ConfigError, match=r"rollout.modee: unknown field \(did you mean mode\?\)"):
        cfgmod.load_for_model("/no/model", overrides=["rollout.modee=x"])


@pytest.mark.parametrize(
    ("item", "named"),
    [
        ("rl.steps=[1", "'[1'"),
        ("rl.steps", "'rl.steps'"),
        ("rl..steps=1", "'rl..steps=1'"),
        ("rl.steps.x=1", "rl.steps"),
    ],
)
def test_a_bad_override_is_a_config_error_naming_it(item: str, named: str) -> None:
    with pytest.raises(ConfigError) as info:
        cfgmod.load_for_model("/no/model", overrides=[item])
    assert named in str(info.value) and "\n" not in str(info.value)


# ---- the one YAML loader: bounded
# -----------------------------------------------------------------
def test_nested_aliases_are_refused_at_once(tmp_path: Path) -> None:
    import time

    rows = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    rows += [
        f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]" for p, n in zip("abcdef", "bcdefg", strict=True)
    ]
    (tmp_path / "bomb.yaml").write_text("\n".join(rows) + "\n")  # 9^7 ≈ 4.8 million values expanded
    assert (tmp_path / "bomb.yaml").stat().st_size < 300
    start = time.monotonic()
    with pytest.raises(ConfigError) as info:
        cfgmod.load(tmp_path / "bomb.yaml")
    assert time.monotonic() - start < 2.0 and len(str(info.value)) < 300
    assert "aliases expand" in str(info.value)
    # a few aliases that stay small are fine
    (tmp_path / "ok.yaml").write_text(
        "rl:\n  gating:\n    choices: &c [4, 8]\neval:\n  modes: [parallel]\n"
    )
    assert cfgmod.load(tmp_path / "ok.yaml").rl.gating.choices == [4, 8]


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(ConfigError, match="refers to itself"):
        cfgmod.parse_yaml("a: &a [*a]\n", "test")


def test_a_config_file_that_is_not_utf8_too_large_or_a_directory_is_named(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_bytes(b"rl:\n  steps: \xff\n")
    with pytest.raises(
        ConfigError,
        match=r"bad.yaml is not UTF-8 text \(byte 0xff at offset 13\); save it as UTF-8",
    ):
        cfgmod.load(tmp_path / "bad.yaml")
    (tmp_path / "big.yaml").write_text("# " + "x" * cfgmod.MAX_CONFIG_BYTES + "\n")
    with pytest.raises(ConfigError, match="big.yaml is .* bytes, over the"):
        cfgmod.load(tmp_path / "big.yaml")
    with pytest.raises(ConfigError, match="is a directory"):
        cfgmod.load(tmp_path)


def test_each_choice_set_is_defined_once_in_config() -> None:
    """ToolMode, PromptClass, Scoring… are written in paravt/config/choices.py only; elsewhere
    imported."""
    import ast
    from typing import get_args

    sets = {
        name: frozenset(get_args(getattr(cfgmod, name)))
        for name in (
            "DispatchMode",
            "TaskType",
            "ModelFamily",
            "ToolMode",
            "PromptClass",
            "Scoring",
            "KLKind",
            "ServeEngine",
        )
    }
    pkg = Path(cfgmod.__file__).parents[1]  # paravt/
    copies = []
    for path in pkg.rglob("*.py"):
        if path == pkg / "config" / "choices.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("Literal"):
                values = frozenset(
                    ast.literal_eval(node.slice)
                    if isinstance(node.slice, ast.Tuple)
                    else [ast.literal_eval(node.slice)]
                )
                copies += [
                    f"{path.relative_to(pkg)}: {name}" for name, v in sets.items() if v == values
                ]
    assert copies == []
