"""Dispatch modes: one registry, one list of names, each mode's rules."""

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import get_args

import numpy as np

from paravt.agent.modes import MODES, Dispatched, Eva, NoTools, Parallel, Sequential
from paravt.agent.settings import EpisodeInput, EpisodeSettings
from paravt.config import DispatchMode
from paravt.models.base import Generator, GenOutput, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_processor
from paravt.protocol import prompts
from paravt.tools import Observation
from paravt.video.types import Frames


def test_the_registry_is_the_config_list() -> None:
    assert set(MODES) == set(get_args(DispatchMode))
    assert all(name == mode.name for name, mode in MODES.items())


def test_each_mode_has_its_rules() -> None:
    assert [MODES[n].call_limit(8) for n in ("parallel", "sequential", "eva")] == [8, 1, 1]
    assert not MODES["none"].uses_tools and all(
        MODES[n].uses_tools for n in ("parallel", "sequential", "eva")
    )
    assert isinstance(MODES["eva"], Sequential) and type(MODES["parallel"]) is Parallel
    assert type(MODES["none"]) is NoTools and type(MODES["eva"]) is Eva


def test_every_mode_has_a_system_prompt() -> None:
    texts = {n: prompts.system_prompt(m.prompt) for n, m in MODES.items()}
    assert len(set(texts.values())) == len(MODES)  # four different prompts
    assert "<tool_call>" not in texts["none"] and "<tool_call>" in texts["parallel"]


def test_token_model_is_a_property_of_the_mode() -> None:
    # eva and sequential put each call's frames back into the main context (T_seq)
    assert {n: m.reinjects_frames for n, m in MODES.items()} == {
        "parallel": False,
        "sequential": True,
        "eva": True,
        "none": False,
    }


@dataclass(frozen=True)
class _View:
    """A read-only episode (frozen: a mode that tried to write to it would raise)."""

    inp: EpisodeInput
    generator: Generator
    codec: ChatCodec
    settings: EpisodeSettings
    episode_id: str
    n_sub_issued: int


class _Sub:
    """Sub-agent requests: the first succeeds with a fixed summary, the others fail at the
    backend."""

    def __init__(self, codec: ChatCodec) -> None:
        self.codec, self.requests = codec, []

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        self.requests.extend(requests)
        ids = self.codec.encode_text("grey") + (self.codec.im_end_id,)
        return [GenOutput(ids, tuple(-0.5 for _ in ids), "grey", "stop")] + [
            GenOutput((), (), "", "error", error="backend down") for _ in requests[1:]
        ]

    async def aclose(self) -> None:
        return None


def test_parallel_returns_what_it_did_and_leaves_the_episode_alone(tiny_qwen3_dir: str) -> None:
    codec = ChatCodec(load_processor(tiny_qwen3_dir))
    frames = Frames(np.zeros((2, 56, 56, 3), dtype=np.uint8), (0.0, 1.0))
    crop = Observation(text="2 frames", frames=frames, window=(0.0, 2.0), delivery="subagent")
    obs = [crop, Observation.failure("bad window"), crop]
    view = _View(
        EpisodeInput("q", "v.mp4", "Which colour?", "mcq", "A"),
        _Sub(codec),
        codec,
        EpisodeSettings(sub_sampling=SamplingParams(temperature=0.0, max_new_tokens=8)),
        "ep",
        5,
    )
    done = asyncio.run(MODES["parallel"].deliver(view, obs))
    assert view.n_sub_issued == 5  # unchanged: the episode applies the record, not the mode
    assert [o.text for o in done.observations] == ["grey", "Error: bad window", ""]
    assert [o.error for o in done.observations] == [
        None,
        "bad window",
        "sub-agent failed: backend down",
    ]
    assert all(o.frames is None and o.delivery == "text" for o in done.observations)
    # two sub-agents issued (indices 6 and 7), one trajectory back, one backend failure
    assert (done.n_sub_issued, done.backend_errors, [t.index for t in done.subs]) == (2, 1, [6])
    (sub,) = done.subs
    assert done.tokens.sub_visual + done.tokens.sub_text == sub.prompt_len
    assert (
        done.tokens.sub_visual > 0
        and done.tokens.generated == sub.n_sampled == len(codec.encode_text("grey")) + 1
    )
    assert done.tokens.main_input == 0


def test_a_mode_that_reinjects_returns_the_observations_as_they_are() -> None:
    obs = (Observation(text="a"), Observation.failure("b"))
    done = asyncio.run(MODES["sequential"].deliver(None, obs))  # type: ignore[arg-type]  # never read
    assert done == Dispatched(obs)
