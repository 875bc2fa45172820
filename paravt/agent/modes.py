"""Dispatch modes (DESIGN §2): what a main turn's tool calls become. One class per mode, one
registry line each (``MODES``); the episode's turn loop asks its mode four things:

- ``prompt``: which system prompt the main agent reads (``paravt.protocol.prompts``);
- ``uses_tools``: whether calls are run at all (``none``: the first response is final);
- ``call_limit(k_max)``: calls run per turn (the rest become error lines);
- ``deliver``: where the observations go: to sub-agents whose text summaries come back
  (``parallel``), or as frames re-injected into the main agent's context (``sequential``, ``eva``).

A new mode = one subclass here + one line in ``MODES`` + its name in ``config.DispatchMode``
(docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from paravt.agent.subagents import SubagentCall, run_subagents
from paravt.agent.tally import Tally, count_vision_tokens
from paravt.agent.trajectory import Trajectory
from paravt.tools import Observation

if TYPE_CHECKING:
    from paravt.agent.settings import EpisodeInput, EpisodeSettings
    from paravt.models.base import Generator
    from paravt.models.chat import ChatCodec


class EpisodeState(Protocol):
    """What a mode may read and update of the running episode."""

    inp: EpisodeInput
    generator: Generator
    codec: ChatCodec
    settings: EpisodeSettings
    episode_id: str
    tally: Tally
    n_sub_issued: int  # sub-agent indices handed out so far (1-based, never reused)
    backend_errors: int


class DispatchMode:
    """Base: calls run, frames re-injected into the main agent's next turn."""

    name: ClassVar[str]
    prompt: ClassVar[str]
    uses_tools: ClassVar[bool] = True

    def call_limit(self, k_max: int) -> int:
        return k_max

    async def deliver(self, run: EpisodeState, obs: Sequence[Observation]
                      ) -> tuple[list[Observation], list[Trajectory]]:
        """The observations as the tool turn shows them, and new sub-agent trajectories."""
        return list(obs), []


class Parallel(DispatchMode):
    """The method: K calls in one turn; each crop goes to a sub-agent, ONE batched request; the
    K text summaries come back in one tool turn."""

    name, prompt = "parallel", "parallel"

    async def deliver(self, run: EpisodeState, obs: Sequence[Observation]
                      ) -> tuple[list[Observation], list[Trajectory]]:
        jobs = [SubagentCall(index=i + 1, frames=o.frames, window=o.window or (0.0, 0.0))
                for i, o in enumerate(obs)
                if o.error is None and o.delivery == "subagent" and o.frames is not None]
        if not jobs:
            return list(obs), []
        s = run.settings
        results = await run_subagents(
            jobs, question=run.inp.question, generator=run.generator, codec=run.codec,
            sampling=s.sub_sampling, timeout_s=s.subagent_timeout_s, episode_id=run.episode_id,
            first_index=run.n_sub_issued + 1, version=s.prompt_version,
        )
        run.n_sub_issued += len(jobs)  # indices stay unique even when a sub-agent fails
        out, subs = list(obs), []
        for job, res in zip(jobs, results, strict=True):
            run.backend_errors += res.backend_error
            if res.trajectory is not None:
                t = res.trajectory
                subs.append(t)
                visual = count_vision_tokens(run.codec, t.ids[: t.prompt_len])
                run.tally.add_prompt(visual=visual, total=t.prompt_len, sub=True)
                run.tally.generated += t.n_sampled
            prev = out[job.index - 1]
            out[job.index - 1] = Observation(text=res.summary, window=prev.window, error=res.error,
                                             delivery="text")
        return out, subs


class Sequential(DispatchMode):
    """The baseline: one call per turn, its frames re-injected into the main agent's context."""

    name, prompt = "sequential", "sequential"

    def call_limit(self, k_max: int) -> int:
        return 1


class Eva(Sequential):
    """EVA: plan before perception; one ``frame_select`` (or crop) per round, frames re-injected,
    rounds until the agent answers (pair with ``rollout.tools: [frame_select]``)."""

    name, prompt = "eva", "eva"


class NoTools(DispatchMode):
    """Direct answering: no tool is offered and the first response is final."""

    name, prompt, uses_tools = "none", "none", False


MODES: dict[str, DispatchMode] = {m.name: m for m in (Parallel(), Sequential(), Eva(), NoTools())}
