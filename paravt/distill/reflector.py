"""EVA's Reflector rules, deterministic (EVA Appendix 1.2, Figure 4; docs/PAPER digest).

The Executor proposes ``frame_select(start, end, nframes, resize)``; before it runs, `reflect`
audits it against what was already executed and corrects it. Rules, applied in this order (each
sees the previous one's output); ``fired`` names the ones that changed something, empty = EVA's
``NO_CHANGE``:

1. ``global_miss``: the previous call was a global scan (its window covers ≥ 90 % of the video)
   and the Executor says it found nothing (`FOUND_NOTHING_RE` on its think) → do not pick a
   random segment: scan the whole video again with ``resize ≥ 0.5`` and ``nframes ≥ 3 ×`` the
   previous scan's (the fps cap of rule 4 still applies);
2. ``dense_repeat``: the proposal samples densely (≥ `DENSE_FPS`) a segment that an earlier call
   already sampled densely (their overlap is ≥ half of the proposal) → widen instead: the window
   is doubled around its centre (clamped to the video), frames unchanged;
3. ``low_budget``: visual budget ``nframes × resize`` (frames counted after the 1 fps cap) <
   `MIN_BUDGET` (15) → raise ``nframes`` to 15 (within the cap), then ``resize`` (up to 1.0) so
   that the capped frames reach the budget; a window shorter than 15 s cannot, it gets resize 1;
4. ``fps_cap``: more than 1 frame per second of window → ``nframes = max(1, ⌊end − start⌋)``;
5. ``pixel_cap`` (ours, not EVA's): ``resize`` above ``max_resize`` is lowered to it — the largest
   scale at which ONE frame fits our ``frame_select`` per-call pixel budget (HD frames at resize 1
   would not; the tool would refuse the call). Rule 3 raises resize only up to ``max_resize``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

MIN_BUDGET = 15.0
MAX_FPS = 1.0
DENSE_FPS = 0.9
GLOBAL_SHARE = 0.9
MIN_GLOBAL_RESIZE = 0.5
GLOBAL_FACTOR = 3
FOUND_NOTHING_RE = re.compile(
    r"\b(nothing|not (?:found|visible|seen|see|clear|sure)|no "
    r"(?:relevant|sign|evidence|such|clear)|"
    r"did(?:n't| not) (?:see|find|show)|can(?:no|')t (?:see|find|tell)|cannot (?:see|find|tell)|"
    r"unclear|too (?:small|blurry|low))\b",
    re.I,
)


@dataclass(frozen=True)
class FrameCall:
    start: float
    end: float
    nframes: int
    resize: float = 1.0

    @property
    def length(self) -> float:
        return self.end - self.start

    @property
    def fps(self) -> float:
        return self.nframes / self.length if self.length > 0 else math.inf

    @property
    def budget(self) -> float:
        return self.nframes * self.resize

    def arguments(self) -> dict[str, float | int]:
        return {
            "start_time": self.start,
            "end_time": self.end,
            "nframes": self.nframes,
            "resize": self.resize,
        }


@dataclass(frozen=True)
class Reflection:
    call: FrameCall
    fired: tuple[str, ...]

    @property
    def no_change(self) -> bool:
        return not self.fired


def is_global(c: FrameCall, duration: float) -> bool:
    return c.length >= GLOBAL_SHARE * duration


def _fps_cap(c: FrameCall) -> int:
    return max(1, math.floor(c.length * MAX_FPS + 1e-9))


def reflect(
    proposal: FrameCall,
    history: Sequence[FrameCall],
    *,
    duration: float,
    think: str = "",
    max_resize: float = 1.0,
) -> Reflection:
    """The corrected call and the rules that fired (see the module docstring)."""
    c, fired = proposal, []
    prev = history[-1] if history else None
    if prev is not None and is_global(prev, duration) and FOUND_NOTHING_RE.search(think or ""):
        new = FrameCall(
            0.0,
            float(duration),
            max(c.nframes, GLOBAL_FACTOR * prev.nframes),
            max(c.resize, prev.resize, MIN_GLOBAL_RESIZE),
        )
        if new != c:
            c = new
            fired.append("global_miss")
    if c.fps >= DENSE_FPS and any(
        h.fps >= DENSE_FPS and _overlap(h, c) >= 0.5 * c.length for h in history
    ):
        half = c.length
        s, e = max(0.0, c.start - half / 2), min(float(duration), c.end + half / 2)
        if (s, e) != (c.start, c.end):
            c = replace(c, start=s, end=e)
            fired.append("dense_repeat")
    cap = _fps_cap(c)
    if min(c.nframes, cap) * c.resize < MIN_BUDGET:
        n = max(c.nframes, min(cap, math.ceil(MIN_BUDGET)))
        r = max(c.resize, min(max_resize, math.ceil(100 * MIN_BUDGET / min(n, cap) - 1e-9) / 100))
        new = replace(c, nframes=n, resize=r)
        if new != c:
            c = new
            fired.append("low_budget")
    if c.nframes > _fps_cap(c):
        c = replace(c, nframes=_fps_cap(c))
        fired.append("fps_cap")
    if c.resize > max_resize:
        c = replace(c, resize=max_resize)
        fired.append("pixel_cap")
    return Reflection(c, tuple(fired))


def max_resize_for(width: int, height: int, per_call_pixels: int) -> float:
    """The largest resize (2 decimals, rounded down, ≤ 1) at which one width × height frame fits."""
    return min(1.0, math.floor(100 * math.sqrt(per_call_pixels / max(1, width * height))) / 100)


def _overlap(a: FrameCall, b: FrameCall) -> float:
    return max(0.0, min(a.end, b.end) - max(a.start, b.start))
