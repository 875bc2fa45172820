"""Dispatch modes: one registry, one list of names, each mode's rules."""

from typing import get_args

from paravt.agent.modes import MODES, Eva, NoTools, Parallel, Sequential
from paravt.config import DispatchMode
from paravt.protocol import prompts


def test_the_registry_is_the_config_list() -> None:
    assert set(MODES) == set(get_args(DispatchMode))
    assert all(name == mode.name for name, mode in MODES.items())


def test_each_mode_has_its_rules() -> None:
    assert [MODES[n].call_limit(8) for n in ("parallel", "sequential", "eva")] == [8, 1, 1]
    assert not MODES["none"].uses_tools and all(MODES[n].uses_tools for n in ("parallel", "sequential", "eva"))
    assert isinstance(MODES["eva"], Sequential) and type(MODES["parallel"]) is Parallel
    assert type(MODES["none"]) is NoTools and type(MODES["eva"]) is Eva


def test_every_mode_has_a_system_prompt() -> None:
    texts = {n: prompts.system_prompt(m.prompt) for n, m in MODES.items()}
    assert len(set(texts.values())) == len(MODES)  # four different prompts
    assert "<tool_call>" not in texts["none"] and "<tool_call>" in texts["parallel"]
