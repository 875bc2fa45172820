"""An episode's result and its reward: what the trainer, eval and the verl loop read of a finished
episode (the turn loop that produces it is ``paravt.agent.episode``)."""

from __future__ import annotations

from dataclasses import dataclass

from paravt.agent.settings import EpisodeInput
from paravt.agent.tally import TokenRow
from paravt.agent.trajectory import CallRecord, EndReason, Trajectory
from paravt.protocol import tags
from paravt.rewards import RewardBreakdown, RewardWeights, compute_reward


@dataclass(frozen=True, eq=False)
class EpisodeResult:
    input: EpisodeInput
    main: Trajectory
    subs: tuple[Trajectory, ...]
    completion: (
        str  # each main turn's prefix + response, joined by tags.join_turns (rewards read this)
    )
    answer: str | None
    calls: tuple[CallRecord, ...]
    # kappa: calls that ran without an error, as the release's tool_call_count counts them (each
    # sub-agent that returned; <tool_code> calls that call_forms=release runs; the final turn's
    # calls under turn_rules=release, which no generation reads, included)
    n_successful_calls: int
    # input tokens summed over every generation request (docs/ARCHITECTURE.md §7), generated tokens
    tokens: TokenRow
    latency_s: float
    error: str | None = None
    backend_errors: int = 0  # inference-backend failures (main or sub-agent), not model behaviour
    crashed: bool = (
        False  # an unexpected exception ended the episode (a bug, never a training signal)
    )
    # each main turn's sampled response WITHOUT its forced prefix, joined like ``completion``:
    # what the model generated (f_tau scores it, as the release logs its format reward)
    generated: str = ""

    @property
    def end_reason(self) -> EndReason:
        return self.main.end_reason

    @property
    def trajectories(self) -> tuple[Trajectory, ...]:
        return (self.main, *self.subs)

    @property
    def answered(self) -> bool:
        """The final main turn wrote an ``<answer>`` tag. Otherwise ``answer`` is only what the
        reward extracts (the text after ``</think>`` or the last line), not an answer the agent
        gave."""
        return bool(self.main.turns) and tags.ANSWER_OPEN in tags.strip_observations(
            self.main.turns[-1].text
        )


def episode_reward(
    res: EpisodeResult, weights: RewardWeights, acc_override: float | None = None
) -> RewardBreakdown:
    """The PARA-GRPO reward of an episode: the ONE definition the trainer, eval and the verl loop
    call. It reads the main agent's completion (the forced think prefixes are already in it, so
    ``prefix=""``; with ``score_prefix`` off it scores ``generated`` alone) and counts
    successful calls for the tool reward (docs/ARCHITECTURE.md §4). ``acc_override`` replaces
    R_acc (an LLM judge's score, ``paravt.models.openai.judge``)."""
    inp = res.input
    stopped = bool(res.main.turns) and res.main.turns[-1].finish_reason == "stop"
    return compute_reward(
        res.completion + (tags.IM_END if stopped else ""),
        task=inp.task,
        answer=inp.answer,
        options=inp.options,
        prefix="",
        successful_calls=res.n_successful_calls,
        weights=weights,
        acc_override=acc_override,
        generated=res.generated,
    )
