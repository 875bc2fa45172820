"""What one main turn's text makes of the episode (docs/ARCHITECTURE.md §2), under
``rollout.call_forms`` and ``rollout.turn_rules``: which calls the turn holds, which of them may
run, and whether the episode ends after it. Functions of the settings and the dispatch mode; the
turn loop (``paravt.agent.episode``) applies them.

Turns are counted as the release counts them (``rollout.max_turns`` = R): up to R + 1 main
generations; the calls of each of the first R run and the next generation reads their results.
The final generation's calls run and count (``n_successful_calls``, kappa) under the release's
per-turn rules (``rollout.turn_rules=release``) though no generation reads them, so their tool turn
is not appended; under ``paravt`` they do not run. Which calls a turn holds is
``rollout.call_forms`` (``paravt.protocol.parser``): under ``release`` a turn with no call ends the
episode (reason ``answer``), and a turn cut by the token budget whose calls read still runs them;
under ``per_call`` a cut turn ends the episode (``length``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from paravt.agent.modes import DispatchMode
from paravt.agent.settings import EpisodeSettings
from paravt.agent.trajectory import EndReason
from paravt.models.base import FinishReason
from paravt.protocol.parser import ParsedCall, parse_calls
from paravt.protocol.validate import validate_calls
from paravt.video.types import VideoInfo

__all__ = ["read_calls", "stop_reason", "validate_turn"]


def read_calls(
    text: str,
    settings: EpisodeSettings,
    positional: Mapping[str, Sequence[str]],
    finish_reason: FinishReason,
) -> tuple[ParsedCall, ...]:
    """The turn's calls under ``settings.call_forms``, the first ``call_cap`` of them."""
    parsed = parse_calls(
        text,
        forms=settings.call_forms,
        positional=positional,
        at_end_of_turn=finish_reason == "stop",
    ).calls
    if settings.call_cap is not None:
        parsed = parsed[: settings.call_cap]  # the calls past the cap are dropped unseen
    return parsed


def stop_reason(
    settings: EpisodeSettings,
    mode: DispatchMode,
    finish_reason: FinishReason,
    has_calls: bool,
    turn: int,
) -> EndReason | None:
    """Why the episode ends after this turn (None: run its tool calls and go on)."""
    runs = has_calls and mode.uses_tools
    if finish_reason == "length" and not (settings.call_forms == "release" and runs):
        return "length"  # per_call: a cut turn ends; release: its calls that read still run
    if not runs:
        return "answer"
    if turn == settings.max_generations - 1:
        return "max_turns"  # calls on the last turn: no turn is left to read their results
    return None  # a forced answer (eval) is asked after turn max_turns - 1, before this one


def validate_turn(
    parsed: Sequence[ParsedCall],
    info: VideoInfo | None,
    settings: EpisodeSettings,
    mode: DispatchMode,
    known_tools: Collection[str],
    video_error: str | None,
) -> list[ParsedCall]:
    """The calls as they will run or fail: under ``turn_rules=paravt`` the mode's cap on ``k_max``,
    a minimum window and no duplicates; with no video (``info`` None) each one fails."""
    if info is None:
        return [replace(c, error=c.error or f"video unavailable: {video_error}") for c in parsed]
    ours = (
        settings.turn_rules == "paravt"
    )  # the release's RL: no cap, no minimum, no de-duplication
    return list(
        validate_calls(
            parsed,
            duration=info.duration,
            k_max=mode.call_limit(settings.k_max if ours else None),
            min_window=settings.min_window_s if ours else 0.0,
            known_tools=set(known_tools),
            dedup=ours,
        )
    )
