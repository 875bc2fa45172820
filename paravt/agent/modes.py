"""Dispatch modes (docs/ARCHITECTURE.md §2): what a main turn's tool calls become. One class per
mode, one registry line each (``MODES``); the episode's turn loop asks its mode:

- ``prompt``: which system prompt the main agent reads (``paravt.protocol.prompts``);
- ``uses_tools``: whether calls are run at all (``none``: the first response is final);
- ``call_limit(k_max)``: calls run per turn (the rest become error lines); ``k_max`` is None under
  the release's per-turn rules (``rollout.turn_rules=release``: no cap), and a mode may still
  keep its own (``sequential``: one call a turn, the baseline's definition);
- ``reinjects_frames``: whether the frames of a call come back into the main agent's context
  (the sequential token model T_seq of ``paravt.eval.tokens``) or not (T_par);
- ``deliver``: where the observations go: to sub-agents whose text summaries come back
  (``parallel``), or as frames re-injected into the main agent's context (``sequential``, ``eva``).

A mode never changes the episode: ``deliver`` reads it (``EpisodeView``) and RETURNS what it did
(``Dispatched``: the observations, new sub-agent trajectories, token and error counts); the
episode alone applies that record to its state.

A new mode = one subclass here + one line in ``MODES`` + its name in ``config.DispatchMode``
(docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from paravt.agent.subagents import SubagentAsk, SubagentCall, run_subagents
from paravt.agent.tally import TokenRow, count_vision_tokens
from paravt.agent.trajectory import Trajectory
from paravt.config import DispatchMode as PromptMode
from paravt.tools import Observation

if TYPE_CHECKING:
    from paravt.agent.settings import EpisodeInput, EpisodeSettings
    from paravt.models.base import Generator
    from paravt.models.chat import ChatCodec


class EpisodeView(Protocol):
    """What a mode may read of the running episode (read only)."""

    @property
    def inp(self) -> EpisodeInput: ...
    @property
    def generator(self) -> Generator: ...
    @property
    def codec(self) -> ChatCodec: ...
    @property
    def settings(self) -> EpisodeSettings: ...
    @property
    def episode_id(self) -> str: ...
    @property
    def n_sub_issued(
        self,
    ) -> int: ...  # sub-agent indices handed out so far (1-based, never reused)


@dataclass(frozen=True)
class Dispatched:
    """What a mode did with one turn's observations; the episode applies it (``_Run._apply``)."""

    observations: tuple[
        Observation, ...
    ]  # as the tool turn shows them, one per call, in call order
    subs: tuple[
        Trajectory, ...
    ] = ()  # new sub-agent trajectories (kept only if the tool turn fits)
    tokens: TokenRow = TokenRow()  # sub-agent input and generated tokens (counted even on rollback)
    n_sub_issued: int = 0  # sub-agent indices used (a failed sub-agent's index is not reused)
    backend_errors: int = 0  # sub-agents whose inference backend failed (not model behaviour)


class DispatchMode:
    """Base: calls run, frames re-injected into the main agent's next turn."""

    name: ClassVar[str]
    prompt: ClassVar[PromptMode]  # the system prompt of paravt.protocol.prompts
    uses_tools: ClassVar[bool] = True
    reinjects_frames: ClassVar[bool] = True  # token model: T_seq (True) or T_par (False)

    def call_limit(self, k_max: int | None) -> int | None:
        return k_max

    async def deliver(self, run: EpisodeView, obs: Sequence[Observation]) -> Dispatched:
        """The observations as the tool turn shows them, and what producing them cost."""
        return Dispatched(tuple(obs))


class Parallel(DispatchMode):
    """The method: K calls in one turn; each crop goes to a sub-agent, ONE batched request; the
    K text summaries come back in one tool turn."""

    name, prompt, reinjects_frames = "parallel", "parallel", False

    async def deliver(self, run: EpisodeView, obs: Sequence[Observation]) -> Dispatched:
        jobs = [
            SubagentCall(index=i + 1, frames=o.frames, window=o.window or (0.0, 0.0))
            for i, o in enumerate(obs)
            if o.error is None and o.delivery == "subagent" and o.frames is not None
        ]
        if not jobs:
            return Dispatched(tuple(obs))
        s = run.settings
        results = await run_subagents(
            jobs,
            ask=SubagentAsk(run.inp.question, s.subagent_prompt, s.prompt_version),
            generator=run.generator,
            codec=run.codec,
            sampling=s.sub_sampling,
            timeout_s=s.subagent_timeout_s,
            episode_id=run.episode_id,
            first_index=run.n_sub_issued + 1,
        )
        out, subs = list(obs), []
        visual = text = generated = 0
        for job, res in zip(jobs, results, strict=True):
            if res.trajectory is not None:
                t = res.trajectory
                subs.append(t)
                v = count_vision_tokens(run.codec, t.ids[: t.prompt_len])
                visual, text, generated = (
                    visual + v,
                    text + t.prompt_len - v,
                    generated + t.n_sampled,
                )
            prev = out[job.index - 1]
            out[job.index - 1] = Observation(
                text=res.summary, window=prev.window, error=res.error, delivery="text"
            )
        return Dispatched(
            tuple(out),
            tuple(subs),
            TokenRow(sub_visual=visual, sub_text=text, generated=generated),
            n_sub_issued=len(jobs),
            backend_errors=sum(r.backend_error for r in results),
        )


class Sequential(DispatchMode):
    """The baseline: one call per turn, its frames re-injected into the main agent's context."""

    name = "sequential"
    prompt: ClassVar[PromptMode] = "sequential"  # declared again: Eva below overrides it

    def call_limit(self, k_max: int | None) -> int | None:
        return 1


class Eva(Sequential):
    """EVA: plan before perception; one ``frame_select`` (or crop) per round, frames re-injected,
    rounds until the agent answers (pair with ``rollout.tools: [frame_select]``)."""

    name, prompt = "eva", "eva"


class NoTools(DispatchMode):
    """Direct answering: no tool is offered and the first response is final."""

    name, prompt, uses_tools, reinjects_frames = "none", "none", False, False


MODES: dict[str, DispatchMode] = {m.name: m for m in (Parallel(), Sequential(), Eva(), NoTools())}
