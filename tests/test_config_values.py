"""Issue 48 items 1, 3 and 12: a value that cannot run is refused when the config LOADS, in one line
that names the field (its dotted path) and the valid values, never later in a traceback.

The class test walks every field of every config section (by introspecting the pydantic models, so
a field added later is covered the day it is added) and feeds each constrained one a wrong value:
a ``Literal`` (or a list of them) an unknown choice, a bounded number a value past each bound, a
field whose valid values live outside the config (``ValuesFrom``: the prompt template folders, the
tool registry, torch's device types) a name that is not there, a bool a word that is not one. A
string field that is none of these must be listed as free text (a path, a URL, a name), so a new
field whose values live elsewhere cannot slip in unchecked."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import annotated_types as at
import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from typer.testing import CliRunner

from paravt import config as cfgmod
from paravt.cli import app
from paravt.config.choices import ValuesFrom
from paravt.errors import ConfigError

ROOTS: tuple[type[BaseModel], ...] = (
    cfgmod.TrainConfig,
    cfgmod.DistillConfig,
    cfgmod.ToolServerConfig,
)

#: String fields whose value is free text by nature: a path, a URL, a name, a raw override. Every
#: other string field must carry its valid values (a Literal or ValuesFrom).
FREE_TEXT = {
    "TrainConfig.out_dir",
    "TrainConfig.data",
    "TrainConfig.data_root",
    "TrainConfig.init_from",
    "TrainConfig.sft.replay_data",
    "TrainConfig.model.path",
    "TrainConfig.model.served_model_name",
    "TrainConfig.model.api_key_file",
    "TrainConfig.rollout.tool_server_url",
    "TrainConfig.rollout.tool_server_key_file",
    "TrainConfig.reward.judge_url",
    "TrainConfig.reward.judge_model",
    "TrainConfig.verl.val_data",
    "TrainConfig.verl.extra_overrides",
    "TrainConfig.logging.project",
    "TrainConfig.logging.run_name",
    "TrainConfig.logging.group",
    "TrainConfig.logging.variant",
    "TrainConfig.logging.wandb_entity",
    "TrainConfig.logging.mlflow_tracking_uri",
    "ToolServerConfig.video_roots",
    "ToolServerConfig.api_key_file",
}


@dataclass(frozen=True)
class Case:
    root: type[BaseModel]
    path: tuple[str, ...]
    bad: Any
    why: str

    @property
    def id(self) -> str:
        return f"{self.root.__name__}.{'.'.join(self.path)}={self.bad!r}"[:120]


def _union_args(annotation: Any) -> tuple[Any, ...]:
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return tuple(a for a in typing.get_args(annotation) if a is not type(None))
    return (annotation,)


def _strip(annotation: Any) -> tuple[Any, list[Any]]:
    """The bare type of ``annotation`` and the metadata of its ``Annotated`` layers."""
    meta: list[Any] = []
    while typing.get_origin(annotation) is typing.Annotated:
        annotation, *more = typing.get_args(annotation)
        for m in more:
            meta += m.metadata if isinstance(m, FieldInfo) else [m]
    return annotation, meta


def _past_bounds(tp: Any, meta: list[Any]) -> list[tuple[Any, str]]:
    """A value past each numeric bound in ``meta`` (``ge=1`` → 0, ``le=64`` → 65, ...)."""
    step = 1 if tp is int else 1e-9
    out: list[tuple[Any, str]] = []
    for m in meta:
        if isinstance(m, at.Ge):
            out.append((m.ge - step, f"below ge={m.ge}"))
        elif isinstance(m, at.Gt):
            out.append((m.gt, f"not above gt={m.gt}"))
        elif isinstance(m, at.Le):
            over = 1 if tp is int else max(1e-9, abs(m.le) * 1e-6)
            out.append((m.le + over, f"above le={m.le}"))
        elif isinstance(m, at.Lt):
            out.append((m.lt, f"not below lt={m.lt}"))
    return out


def _bad_values(field: FieldInfo) -> list[tuple[Any, str]]:
    """Wrong values for one field (empty when its values are not a constrained set)."""
    out: list[tuple[Any, str]] = []
    field_meta = list(field.metadata)
    for arg in _union_args(field.annotation):
        tp, meta = _strip(arg)
        meta = [*field_meta, *meta]
        origin = typing.get_origin(tp)
        marker = next((m for m in meta if isinstance(m, ValuesFrom)), None)
        if origin is typing.Literal:
            out.append(("no-such-choice", "not a Literal choice"))
        elif origin is list:
            (item,) = typing.get_args(tp)
            item_tp, item_meta = _strip(item)
            if typing.get_origin(item_tp) is typing.Literal:
                out.append((["no-such-choice"], "a list item not a Literal choice"))
            elif marker is not None or any(isinstance(m, ValuesFrom) for m in item_meta):
                out.append((["no-such-value"], "a list item not among the values"))
        elif origin is tuple:
            items = typing.get_args(tp)
            for i, item in enumerate(items):
                item_tp, item_meta = _strip(item)
                good = list(field.get_default(call_default_factory=True))
                for bad, why in _past_bounds(item_tp, item_meta):
                    out.append(((*good[:i], bad, *good[i + 1 :]), f"item {i} {why}"))
        elif marker is not None:
            out.append(("no-such-value", "not among the values"))
        elif tp is bool:
            out.append(("maybe", "not a bool"))
        elif tp in (int, float):
            out += _past_bounds(tp, meta)
    return out


def _walk(root: type[BaseModel]) -> tuple[list[Case], list[str]]:
    """Every constrained field's wrong values under ``root``, and the free string fields."""
    cases: list[Case] = []
    free: list[str] = []

    def visit(model: type[BaseModel], path: tuple[str, ...]) -> None:
        for name, field in model.model_fields.items():
            here = (*path, name)
            sub = next(
                (
                    a
                    for a in _union_args(field.annotation)
                    if isinstance(a, type) and issubclass(a, BaseModel)
                ),
                None,
            )
            if sub is not None:
                visit(sub, here)
                continue
            bad = _bad_values(field)
            cases.extend(Case(root, here, b, why) for b, why in bad)
            if not bad and any(
                _strip(a)[0] is str or typing.get_args(_strip(a)[0]) == (str,)
                for a in _union_args(field.annotation)
            ):
                free.append(f"{root.__name__}.{'.'.join(here)}")

    visit(root, ())
    return cases, free


CASES = [c for root in ROOTS for c in _walk(root)[0]]


def _nest(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {path[-1]: value}
    for part in reversed(path[:-1]):
        out = {part: out}
    return out


def test_the_walk_reaches_every_kind_of_constraint() -> None:
    """The walker is not vacuous: it finds the fields of each kind this issue names."""
    found = {(c.root.__name__, ".".join(c.path)) for c in CASES}
    assert {
        ("TrainConfig", "rollout.prompt_version"),  # ValuesFrom: the template folders
        ("TrainConfig", "rollout.tools"),  # ValuesFrom: the tool registry
        ("TrainConfig", "model.device"),  # ValuesFrom: torch's device types
        ("TrainConfig", "reward.tool_mode"),  # Literal
        ("TrainConfig", "eval.modes"),  # list of Literal
        ("TrainConfig", "rl.reward_scale"),  # bounded float
        ("TrainConfig", "rl.adam_betas"),  # tuple of bounded floats
        ("TrainConfig", "sampling.max_new_tokens"),  # bounded int
        ("TrainConfig", "rl.gating.enabled"),  # bool, nested two deep
        ("TrainConfig", "sft.max_steps"),  # optional, bounded inside Annotated
        ("DistillConfig", "pipeline"),
        ("ToolServerConfig", "max_crop_fps"),
    } <= found
    assert len(CASES) > 150


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_constrained_field_refuses_a_wrong_value_naming_the_field(case: Case) -> None:
    with pytest.raises(ConfigError) as info:
        cfgmod.validate(case.root, _nest(case.path, case.bad), "walk.yaml")
    msg = str(info.value)
    assert ".".join(case.path) in msg and "\n" not in msg, (case.why, msg)


def test_every_string_field_is_constrained_or_declared_free_text() -> None:
    free = {f for root in ROOTS for f in _walk(root)[1]}
    assert free - FREE_TEXT == set(), (
        "string fields with no declared values: give each a Literal or ValuesFrom "
        "(paravt/config/choices.py), or list it in FREE_TEXT if any text is valid"
    )
    assert FREE_TEXT - free == set(), "FREE_TEXT lists fields that are gone or now constrained"


# ---- item 1: values that live elsewhere are checked when the config loads ------------------------
@pytest.mark.parametrize("bad", ["v3", "", "../v1", "V2", "v2 "])
def test_an_unknown_prompt_version_is_refused_at_load_with_the_versions(
    bad: str, tmp_path: Path
) -> None:
    (tmp_path / "c.yaml").write_text(f"rollout:\n  prompt_version: {bad!r}\n")
    res = CliRunner().invoke(app, ["config", "check", str(tmp_path / "c.yaml")])
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1, res.stderr
    assert "rollout.prompt_version" in lines[0] and "v1, v2" in lines[0]
    assert repr(bad) in lines[0]


def test_the_prompt_versions_are_the_packaged_template_folders() -> None:
    from importlib import resources

    from paravt.config.choices import prompt_versions
    from paravt.protocol import prompts

    folders = resources.files("paravt") / "protocol" / "templates"
    needs = {p.name for p in (folders / "v2").iterdir()}
    on_disk = sorted(
        p.name
        for p in folders.iterdir()
        if p.is_dir() and needs <= {f.name for f in p.iterdir()}  # eval_release is no version
    )
    assert list(prompt_versions()) == on_disk == list(prompts.VERSIONS)
    assert {"v1", "v2"} <= set(on_disk) and "eval_release" not in on_disk
    for v in on_disk:  # each one loads
        assert cfgmod.validate(cfgmod.TrainConfig, {"rollout": {"prompt_version": v}})


def test_an_unknown_tool_is_refused_at_load_unless_a_tool_server_lists_the_tools() -> None:
    with pytest.raises(ConfigError) as info:
        cfgmod.validate(cfgmod.TrainConfig, {"rollout": {"tools": ["crop_video", "crop_vidoe"]}})
    msg = str(info.value)
    assert "rollout.tools" in msg and "'crop_vidoe'" in msg and "crop_video, frame_select" in msg
    ok = {"tools": ["mcp:http://127.0.0.1:9/mcp", "frame_select"]}  # an MCP server lists its own
    assert cfgmod.validate(cfgmod.TrainConfig, {"rollout": ok}).rollout.tools == ok["tools"]
    remote = {"tools": ["its_own_tool"], "tool_server_url": "http://127.0.0.1:9"}
    assert cfgmod.validate(cfgmod.TrainConfig, {"rollout": remote}).rollout.tools == [
        "its_own_tool"
    ]


def test_a_registered_plugin_tool_is_accepted() -> None:
    from paravt.tools import register_tool, unregister_tool
    from paravt.tools.crop import CropVideo

    class Mine(CropVideo):
        name = "mine"  # type: ignore[assignment]

    register_tool("mine", Mine, origin="test:mine")
    try:
        cfg = cfgmod.validate(cfgmod.TrainConfig, {"rollout": {"tools": ["mine"]}})
        assert cfg.rollout.tools == ["mine"]
    finally:
        unregister_tool("mine")


def test_the_configs_builtin_tools_are_the_registrys() -> None:
    from paravt.config.choices import BUILTIN_TOOLS, TOOL_ENTRY_POINTS
    from paravt.tools.registry import ENTRY_POINT_GROUP, _register_builtins, available_tools

    _register_builtins()
    assert set(BUILTIN_TOOLS) <= set(available_tools()) and ENTRY_POINT_GROUP == TOOL_ENTRY_POINTS
    from paravt.tools.crop import CropVideo
    from paravt.tools.frame_select import FrameSelect
    from paravt.tools.python_tool import PythonTool

    assert {CropVideo.name, FrameSelect.name, PythonTool.name} == set(BUILTIN_TOOLS)


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1", "mps", "xpu:0", "cpu:0"])
def test_torch_device_strings_load(device: str) -> None:
    cfg = cfgmod.validate(cfgmod.TrainConfig, {"model": {"device": device}})
    assert cfg.model.device == device


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "cuda0", "Cuda", "auto", ""])
def test_a_device_torch_does_not_know_is_refused_at_load(device: str) -> None:
    with pytest.raises(ConfigError, match=r"model\.device: .*cpu, cuda"):
        cfgmod.validate(cfgmod.TrainConfig, {"model": {"device": device}})


def test_every_listed_device_type_is_one_torch_parses() -> None:
    import torch

    from paravt.config.choices import TORCH_DEVICE_TYPES

    for t in TORCH_DEVICE_TYPES:
        assert torch.device(t).type == t


# ---- item 3: tool_mode off as YAML writes it -----------------------------------------------------
def test_tool_mode_off_unquoted_as_docs_write_it_loads(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("reward:\n  tool_mode: off\n")  # YAML 1.1: off is false
    assert cfgmod.load(tmp_path / "c.yaml").reward.tool_mode == "off"
    cfg = cfgmod.load(tmp_path / "c.yaml", overrides=["reward.tool_mode=off"])
    assert cfg.reward.tool_mode == "off"
    docs = (Path(__file__).parents[1] / "docs" / "repro.md").read_text()
    assert "`reward.tool_mode: off`" in docs


@pytest.mark.parametrize("word", ["on", "yes", "true"])
def test_tool_mode_read_as_true_is_refused_saying_to_quote(word: str, tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(f"reward:\n  tool_mode: {word}\n")
    with pytest.raises(ConfigError) as info:
        cfgmod.load(tmp_path / "c.yaml")
    msg = str(info.value)
    assert "reward.tool_mode" in msg and "quote" in msg and "'graduated'" in msg


# ---- item 12: config errors name the field ------------------------------------------------------
def test_a_deeply_nested_value_names_its_field(tmp_path: Path) -> None:
    depth = 20_000
    (tmp_path / "c.yaml").write_text("rl:\n  steps: 3\n  lr: " + "[" * depth + "]" * depth + "\n")
    with pytest.raises(ConfigError) as info:
        cfgmod.load(tmp_path / "c.yaml")
    msg = str(info.value)
    assert "rl.lr" in msg and "line 3" in msg and len(msg) < 400


def test_a_huge_value_names_its_key_and_is_cut_in_the_message(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("rl:\n  steps: 3\n  lrr: '" + "x" * 10_000_000 + "'\n")
    with pytest.raises(ConfigError) as info:
        cfgmod.load(tmp_path / "c.yaml")
    msg = str(info.value)
    assert "rl.lrr" in msg and "line 3" in msg and "not a field" in msg and len(msg) < 500


def test_an_unknown_nested_override_names_its_whole_path() -> None:
    with pytest.raises(ConfigError) as info:
        cfgmod.load_for_model("/no/model", overrides=["a.b.c.d=1"])
    assert "a.b.c.d" in str(info.value)
    with pytest.raises(ConfigError) as info:
        cfgmod.load_for_model("/no/model", overrides=["rl.gatin.enabled=false"])
    msg = str(info.value)
    assert "rl.gatin.enabled" in msg and "did you mean gating" in msg


def test_an_empty_config_file_is_named_as_empty(tmp_path: Path) -> None:
    for text in ("", "# only a comment\n", "---\n"):
        (tmp_path / "c.yaml").write_text(text)
        res = CliRunner().invoke(app, ["config", "check", str(tmp_path / "c.yaml")])
        assert res.exit_code == 2, res.output
        assert f"empty config file {tmp_path / 'c.yaml'}" in res.stderr


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("sampling.max_new_tokens", 10**11),
        ("sampling.sub_max_new_tokens", 10**11),
        ("eval.workers", 10**7),
        ("rollout.k_max", 10**6),
    ],
)
def test_sizes_no_real_run_needs_are_refused(key: str, value: int) -> None:
    with pytest.raises(ConfigError, match=rf"{key}: Input should be less than or equal to"):
        cfgmod.load_for_model("/no/model", overrides=[f"{key}={value}"])
