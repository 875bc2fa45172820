"""The ONE backend builder (paravt.agent.backend, issue 32): every field of ``ModelConfig`` and the
tool fields of ``RolloutConfig`` reach the object they configure, and every caller (`paravt eval`,
`paravt infer`, `paravt repro`'s eval) hands the builder its config whole, so no field is lost on
the way. The config used changes every field from its default (tests/changed_config.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from paravt.agent import backend as backend_mod
from paravt.agent.backend import open_backend
from paravt.config import RUN_CONFIG, ModelConfig, RolloutConfig, save
from paravt.errors import ConfigError

sys.path.insert(0, str(Path(__file__).parents[1]))
from changed_config import KEY, changed_config, check_changed  # noqa: E402


class Landed(dict):
    """What the spies received: ``landed[component] = kwargs``."""


class AnsweringGen(str):
    """The openai spy's generator: its server answers the check made before any episode."""

    async def check(self, key_file: str | None = None) -> None:
        pass


@pytest.fixture
def landed(monkeypatch: pytest.MonkeyPatch) -> Landed:
    """Spies in place of the model loaders, the generators, the codec and the tool builder."""
    got = Landed()

    def spy(name: str, result: Any):
        def f(*args: Any, **kw: Any) -> Any:
            got[name] = {"args": args, **kw}
            return result

        return f

    policy = SimpleNamespace(model=SimpleNamespace(eval=lambda: None), processor="processor")
    monkeypatch.setattr("paravt.models.hf.loading.load_policy", spy("load_policy", policy))
    monkeypatch.setattr(
        "paravt.models.hf.loading.load_processor",
        spy("load_processor", SimpleNamespace(tokenizer="tok")),
    )
    monkeypatch.setattr("paravt.models.hf.replicas.hf_generator", spy("hf_generator", "hf-gen"))
    monkeypatch.setattr(
        "paravt.models.openai.backend.OpenAIGenerator", spy("openai", AnsweringGen("openai-gen"))
    )
    monkeypatch.setattr("paravt.models.chat.ChatCodec", spy("codec", "codec"))
    monkeypatch.setattr("paravt.tools.build_toolset", spy("tools", "toolset"))
    return got


def test_the_changed_config_changes_every_field_of_the_builders_sections() -> None:
    assert check_changed() == []


#: Where each field of ModelConfig lands: (backend route, spy, how to read the value there).
MODEL_LANDS = {
    "path": [
        ("hf", "load_policy", lambda r: r["args"][0]),
        ("openai", "openai", lambda r: r["args"][0]),
    ],
    "backend": [("hf", "load_policy", lambda r: "hf"), ("openai", "openai", lambda r: "openai")],
    "device": [("hf", "load_policy", lambda r: r["device"])],
    "dtype": [("hf", "load_policy", lambda r: r["dtype"])],
    "served_model_name": [("openai", "openai", lambda r: r["model"])],
    "request_timeout_s": [("openai", "openai", lambda r: r["timeout_s"])],
    "max_retries": [("openai", "openai", lambda r: r["retry"].max_retries)],
    "max_concurrency": [("openai", "openai", lambda r: r["max_concurrency"])],
    "api_key_file": [("openai", "openai", lambda r: KEY if r["api_key"] == KEY else r["api_key"])],
    "prefill_threads": [("hf", "hf_generator", lambda r: r["prefill_threads"])],
    "replicas": [("hf", "hf_generator", lambda r: r["replicas"])],
    "replica_timeout_s": [("hf", "hf_generator", lambda r: r["replica_timeout_s"])],
    "continuous_batching": [("hf", "hf_generator", lambda r: r["continuous"])],
}
ROLLOUT_LANDS = {  # the tool fields; the others are episode settings (EpisodeSettings.from_config)
    "tools": lambda r: list(r["args"][0]),
    "tool_server_url": lambda r: r["server_url"],
    "tool_server_key_file": lambda r: r["server_key_file"],
    "python_weak_isolation": lambda r: bool(
        r["options"] and r["options"]["python"]["weak_isolation"]
    ),
}


def _routes(tmp_path: Path) -> dict[str, ModelConfig]:
    cfg = changed_config(tmp_path)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir(exist_ok=True)
    return {
        "openai": cfg.model,
        "hf": cfg.model.model_copy(update={"path": str(ckpt), "backend": "hf"}),
    }


def test_every_model_field_reaches_the_generator_it_configures(
    tmp_path: Path, landed: Landed
) -> None:
    assert set(MODEL_LANDS) == set(ModelConfig.model_fields)  # a new field must say where it lands
    routes = _routes(tmp_path)
    seen: dict[str, dict[str, Any]] = {}
    for route, model in routes.items():
        landed.clear()
        backend = open_backend(model, changed_config(tmp_path).rollout, processor_dir="proc")
        assert backend.generator == f"{route}-gen" and backend.tools == "toolset"
        seen[route] = dict(landed)
    for field, places in MODEL_LANDS.items():
        for route, spy, read in places:
            want = getattr(routes[route], field)
            want = KEY if field == "api_key_file" else want
            assert read(seen[route][spy]) == want, (field, route)
    assert seen["openai"]["load_processor"]["args"] == ("proc",)


def test_every_tool_field_of_the_rollout_reaches_the_tool_builder(
    tmp_path: Path, landed: Landed
) -> None:
    cfg = changed_config(tmp_path)
    open_backend(_routes(tmp_path)["hf"], cfg.rollout)
    for field, read in ROLLOUT_LANDS.items():
        assert read(landed["tools"]) == getattr(cfg.rollout, field), field


def test_the_judge_comes_from_the_reward_section(tmp_path: Path, landed: Landed) -> None:
    cfg = changed_config(tmp_path)
    reward = cfg.reward.model_copy(
        update={"judge_url": "http://127.0.0.1:7/v1", "judge_model": "j", "judge_timeout_s": 3.0}
    )
    b = open_backend(_routes(tmp_path)["hf"], cfg.rollout, judge=reward)
    assert (b.judge_url, b.judge_model, b.judge_timeout_s) == ("http://127.0.0.1:7/v1", "j", 3.0)


def test_a_backend_that_cannot_serve_the_path_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="set model.backend=openai"):
        open_backend(ModelConfig(path="http://127.0.0.1:9/v1"), RolloutConfig())
    with pytest.raises(ConfigError, match="set model.backend=hf"):
        open_backend(ModelConfig(path=str(tmp_path), backend="openai"), RolloutConfig())


# ---- the callers: each hands the builder the config as loaded (every field changed)
# ------------------


class Stop(Exception):
    """Raised by the builder's spy: the caller got as far as building its backend."""


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    got: dict[str, Any] = {}

    def spy(model: ModelConfig, rollout: RolloutConfig, **kw: Any) -> Any:
        got.update(model=model, rollout=rollout, **kw)
        raise Stop

    monkeypatch.setattr(backend_mod, "open_backend", spy)
    return got


def _cli(args: list[str]) -> Any:
    from paravt.cli import app

    return CliRunner().invoke(app, args)


@pytest.mark.parametrize("route", ["openai", "hf"])
def test_eval_hands_the_builder_every_field(
    route: str, tmp_path: Path, built: dict[str, Any]
) -> None:
    cfg = changed_config(tmp_path)
    save(cfg, tmp_path / "c.yaml")
    model = _routes(tmp_path)[route]
    res = _cli(
        [
            "eval",
            "--model",
            model.path,
            "--benchmark",
            "videomme",
            "--root",
            str(tmp_path),
            "--config",
            str(tmp_path / "c.yaml"),
            "--processor",
            "proc",
            "--out",
            str(tmp_path / "ev"),
        ]
    )
    assert built, res.output  # the spy stopped the command at the builder
    assert (
        built["model"] == model and built["rollout"] == cfg.rollout
    )  # --model sets path and backend
    assert built["processor_dir"] == "proc" and built["judge"] == cfg.reward


def test_infer_hands_the_builder_every_field(tmp_path: Path, built: dict[str, Any]) -> None:
    from paravt.video import draw, write_video

    cfg = changed_config(tmp_path)
    model = _routes(tmp_path)["hf"]
    save(cfg, Path(model.path) / RUN_CONFIG)  # the checkpoint's own settings
    video = tmp_path / "v.mp4"
    write_video(video, [draw.solid(32, 32, (9 * i, 0, 0)) for i in range(4)], fps=2.0)
    res = _cli(["infer", "--model", model.path, "--video", str(video), "--question", "q?"])
    assert built, res.output
    assert built["model"] == model and built["rollout"] == cfg.rollout


def test_repro_eval_hands_the_builder_the_variants_config(
    tmp_path: Path, built: dict[str, Any]
) -> None:
    from paravt.repro.presets import PRESETS
    from paravt.repro.training import eval_variant
    from paravt.repro.variants import VARIANTS

    cfg = changed_config(tmp_path).model_copy(update={"model": _routes(tmp_path)["hf"]})
    with pytest.raises(Stop):
        eval_variant(
            tmp_path / "repro", cfg, PRESETS["demo"], VARIANTS["sft"], 0, "runs/x/model", limit=1
        )
    assert built["model"] == cfg.model.model_copy(update={"path": "runs/x/model"})
    assert built["rollout"] == cfg.rollout
