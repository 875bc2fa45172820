"""Per-call validation of parsed tool calls (docs/ARCHITECTURE.md §2): the rules a call must pass
before it runs.

Parsing (``paravt.protocol.parser``) reads what the model wrote; validation decides what of it
can run against one video: known tool, a non-empty window inside the video, and under our per-turn
rules (``rollout.turn_rules=paravt``, and eval) not too short, not a duplicate, at most ``k_max``
per turn. The release's RL rules (``turn_rules=release``) are ``k_max=None, min_window=0,
dedup=False``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from paravt.errors import ToolCallError
from paravt.protocol.arguments import TIME_KEYS, WINDOW_TOOLS
from paravt.protocol.parser import ParsedCall


def validate_calls(
    calls: Iterable[ParsedCall],
    *,
    duration: float,
    k_max: int | None,
    min_window: float,
    known_tools: set[str] | frozenset[str],
    window_tools: frozenset[str] = WINDOW_TOOLS,
    dedup: bool = True,
) -> tuple[ParsedCall, ...]:
    """Each call validated independently (docs/ARCHITECTURE.md §2); returns the calls in order, with
    ``error`` set on the ones that cannot run. Rules, first failing one wins:

    1. a parse error stays; 2. the tool must be in ``known_tools``; 3. a window tool needs
    ``start_time`` and ``end_time`` with start < end (as written); 4. the window is clamped to
    ``[0, duration]`` and the CLAMPED window is recorded in ``arguments``; 5. the clamped window
    must be non-empty (a window that starts at or after the end of the video is refused) and at
    least ``min_window`` long; 6. with ``dedup``, it must not repeat the window of an earlier valid
    call of the same turn; 7. at most ``k_max`` calls are accepted (None: no cap): a valid call
    beyond the first ``k_max`` valid ones is rejected ("beyond k_max").
    """
    if not duration > 0 or (k_max is not None and k_max < 1) or min_window < 0:
        raise ToolCallError(
            f"validate_calls needs duration > 0, k_max >= 1 or None, min_window >= 0; got "
            f"duration={duration}, k_max={k_max}, min_window={min_window}: pass the video's "
            "probed duration and the rollout limits"
        )
    out: list[ParsedCall] = []
    seen: set[tuple[float, float]] = set()
    accepted = 0
    for call in calls:
        checked = _check_call(call, duration, min_window, known_tools, window_tools, seen)
        if checked.error is None:
            if k_max is not None and accepted >= k_max:
                checked = replace(checked, error=f"beyond k_max: only {k_max} calls run per turn")
            else:
                accepted += 1
                if dedup and checked.window is not None and checked.name in window_tools:
                    seen.add(_key(checked.window))
        out.append(checked)
    return tuple(out)


def _check_call(
    call: ParsedCall,
    duration: float,
    min_window: float,
    known: set[str] | frozenset[str],
    window_tools: frozenset[str],
    seen: set[tuple[float, float]],
) -> ParsedCall:
    if call.error is not None:
        return call
    if call.name not in known:
        avail = ", ".join(sorted(known)) or "none"
        return replace(call, error=f"unknown tool {call.name!r}; available: {avail}")
    if call.name not in window_tools:
        return call
    missing = [k for k in TIME_KEYS if not isinstance(call.arguments.get(k), float)]
    if missing:
        return replace(call, error=f"{call.name} needs {' and '.join(missing)} (seconds or MM:SS)")
    start, end = call.arguments["start_time"], call.arguments["end_time"]
    if start >= end:
        return replace(call, error=f"start_time {start:g} must be < end_time {end:g}")
    cs, ce = min(max(start, 0.0), float(duration)), min(max(end, 0.0), float(duration))
    args = {**call.arguments, "start_time": cs, "end_time": ce}
    call = replace(call, arguments=args)
    if ce <= cs:
        return replace(
            call,
            error=f"window {start:g}-{end:g} s lies outside the {duration:g} s video",
        )
    if ce - cs < min_window:
        return replace(
            call,
            error=f"window {cs:g}-{ce:g} s (clamped to the {duration:g} s video) "
            f"is shorter than {min_window:g} s",
        )
    if _key((cs, ce)) in seen:
        return replace(call, error=f"duplicate window {cs:g}-{ce:g} s in the same turn")
    return call


def _key(window: tuple[float, float]) -> tuple[float, float]:
    return round(window[0], 6), round(window[1], 6)
