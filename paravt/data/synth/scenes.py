"""ParaVT-Synth video design (docs/ARCHITECTURE.md §9): pure functions from a seed to a video spec
and frames.

A video is D ∈ [60, 300] whole seconds at 1 or 2 fps, 64×64 px. The background changes scene
every 20–60 s (a muted colour with two slowly moving muted shapes). One "needle" of 3–8 whole
seconds shows LARGE evidence: a full-frame flash of a saturated colour, a big white digit on
black, or a big saturated shape on black. Frame k is shown at k/fps s; the needle covers the
frames with needle_start ≤ k/fps < needle_end.

`overview_indices` reproduces the target-time rule of `paravt.video.sample_frames`
(t_i = (i + 0.5)·D/n, nearest frame), so `caught_by_overview` says whether an n-frame uniform
overview shows the needle — the row's "tool necessity".
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from paravt.video import draw
from paravt.video.budget import target_times

_TICKS = 90_000  # paravt.video.writer.TIME_BASE = 1/90000 s

NEEDLE_KINDS: tuple[str, ...] = ("flash", "digit", "shape")
SHAPES: tuple[str, ...] = ("circle", "square", "cross")
NEEDLE_COLORS: tuple[str, ...] = ("red", "green", "blue", "yellow", "cyan", "magenta", "orange")
#: How far along ``NEEDLE_COLORS`` a probe's swapped report moves a colour (``other_color``).
COLOR_SHIFT = 3
# Muted (low-saturation, mid-brightness) backgrounds: far from every saturated needle colour.
MUTED: tuple[tuple[int, int, int], ...] = (
    (96, 96, 104),
    (110, 100, 90),
    (90, 105, 95),
    (100, 92, 110),
    (120, 115, 100),
    (85, 95, 110),
    (105, 110, 115),
    (115, 100, 105),
)


@dataclass(frozen=True)
class Mover:
    shape: str  # "circle" | "rect"
    rgb: tuple[int, int, int]
    x0: float
    y0: float
    vx: float  # px per second
    vy: float
    size: float


@dataclass(frozen=True)
class Scene:
    start: float
    end: float
    rgb: tuple[int, int, int]
    movers: tuple[Mover, ...]


@dataclass(frozen=True)
class Needle:
    kind: str  # flash | digit | shape
    start: float
    end: float
    color: str  # colour name (flash, shape); "white" for digits
    digit: int | None = None
    shape: str | None = None

    @property
    def label(self) -> str:
        """Short open-ended answer, e.g. "red flash", "digit 7", "blue circle"."""
        if self.kind == "flash":
            return f"{self.color} flash"
        if self.kind == "digit":
            return f"digit {self.digit}"
        return f"{self.color} {self.shape}"

    @property
    def description(self) -> str:
        if self.kind == "flash":
            return f"a full-frame {self.color} flash"
        if self.kind == "digit":
            return f"a large digit {self.digit}"
        return f"a large {self.color} {self.shape}"


def other_color(color: str, shift: int = COLOR_SHIFT) -> str:
    """Another needle colour, ``shift`` places along ``NEEDLE_COLORS``: what a probe's swapped
    report names instead of the true one."""
    return NEEDLE_COLORS[(NEEDLE_COLORS.index(color) + shift) % len(NEEDLE_COLORS)]


@dataclass(frozen=True)
class VideoSpec:
    name: str
    duration: int  # seconds
    fps: int
    width: int
    height: int
    scenes: tuple[Scene, ...]
    needle: Needle

    @property
    def num_frames(self) -> int:
        return self.duration * self.fps

    def needle_frames(self) -> range:
        first = math.ceil(self.needle.start * self.fps - 1e-9)
        last = math.ceil(self.needle.end * self.fps - 1e-9)  # exclusive
        return range(first, min(last, self.num_frames))


def make_spec(
    name: str,
    rng: np.random.Generator,
    *,
    min_duration: int = 60,
    max_duration: int = 300,
    size: tuple[int, int] = (64, 64),
    needle_len: tuple[int, int] = (3, 8),
    needle_kinds: Sequence[str] = NEEDLE_KINDS,
) -> VideoSpec:
    """Draw one video design from ``rng`` (all randomness of a video comes from here); its needle
    is of one of ``needle_kinds`` (all three by default)."""
    duration = int(rng.integers(min_duration, max_duration + 1))
    fps = int(rng.choice([1, 2]))
    w, h = size
    scenes = _make_scenes(rng, duration, w, h)
    length = int(rng.integers(needle_len[0], needle_len[1] + 1))
    start = int(rng.integers(2, duration - length - 2 + 1))
    return VideoSpec(
        name, duration, fps, w, h, scenes, draw_needle(rng, needle_kinds, start, start + length)
    )


def draw_needle(rng: np.random.Generator, kinds: Sequence[str], start: float, end: float) -> Needle:
    """A needle of one of ``kinds`` shown over [start, end): its kind, then its colour, digit or
    shape, drawn from ``rng`` in that order."""
    kind = str(rng.choice(list(kinds)))
    if kind == "flash":
        return Needle(kind, start, end, str(rng.choice(NEEDLE_COLORS)))
    if kind == "digit":
        return Needle(kind, start, end, "white", digit=int(rng.integers(0, 10)))
    return Needle(kind, start, end, str(rng.choice(NEEDLE_COLORS)), shape=str(rng.choice(SHAPES)))


def _make_scenes(rng: np.random.Generator, duration: int, w: int, h: int) -> tuple[Scene, ...]:
    scenes: list[Scene] = []
    t, last_rgb = 0, -1
    while t < duration:
        length = int(rng.integers(20, 61))
        end = min(duration, t + length)
        if duration - end < 20:  # do not leave a scene shorter than 20 s at the end
            end = duration
        idx = int(rng.integers(0, len(MUTED) - 1))
        idx = idx + 1 if idx >= last_rgb >= 0 else idx  # never repeat the previous background
        last_rgb = idx
        movers = tuple(_make_mover(rng, w, h) for _ in range(2))
        scenes.append(Scene(float(t), float(end), MUTED[idx], movers))
        t = end
    return tuple(scenes)


def _make_mover(rng: np.random.Generator, w: int, h: int) -> Mover:
    base = MUTED[int(rng.integers(0, len(MUTED)))]
    r, g, b = (int(min(255, c * 0.6)) for c in base)  # a darker muted tone
    return Mover(
        str(rng.choice(["circle", "rect"])),
        (r, g, b),
        float(rng.uniform(0, w)),
        float(rng.uniform(0, h)),
        float(rng.uniform(-4, 4)),
        float(rng.uniform(-4, 4)),
        float(rng.uniform(4, 9)),
    )


def _bounce(p: float, size: int) -> float:
    period = 2 * size
    q = p % period
    return q if q < size else period - q


def render_frame(spec: VideoSpec, k: int) -> np.ndarray:
    """Frame ``k`` (uint8 H×W×3) of the video."""
    t = k / spec.fps
    w, h = spec.width, spec.height
    if k in spec.needle_frames():
        return _render_needle(spec.needle, w, h)
    scene = next((s for s in spec.scenes if s.start <= t < s.end), spec.scenes[-1])
    img = draw.solid(h, w, scene.rgb)
    dt = t - scene.start
    for m in scene.movers:
        cx, cy = _bounce(m.x0 + m.vx * dt, w), _bounce(m.y0 + m.vy * dt, h)
        if m.shape == "circle":
            draw.fill_circle(img, cx, cy, m.size, m.rgb)
        else:
            s = int(m.size)
            draw.fill_rect(img, int(cx) - s, int(cy) - s, int(cx) + s, int(cy) + s, m.rgb)
    return img


def _render_needle(n: Needle, w: int, h: int) -> np.ndarray:
    if n.kind == "flash":
        return draw.solid(h, w, draw.COLORS[n.color])
    img = draw.solid(h, w, (0, 0, 0))
    rgb = draw.COLORS[n.color]
    if n.kind == "digit":
        assert n.digit is not None
        draw.draw_digit(img, n.digit, w // 5, h // 10, w - w // 5, h - h // 10, rgb)
    elif n.shape == "circle":
        draw.fill_circle(img, (w - 1) / 2, (h - 1) / 2, min(w, h) * 0.42, rgb)
    elif n.shape == "square":
        draw.fill_rect(img, w // 8, h // 8, w - w // 8, h - h // 8, rgb)
    else:  # cross
        draw.fill_rect(img, w // 3, h // 12, w - w // 3, h - h // 12, rgb)
        draw.fill_rect(img, w // 12, h // 3, w - w // 12, h - h // 3, rgb)
    return img


def iter_frames(spec: VideoSpec) -> Iterator[np.ndarray]:
    for k in range(spec.num_frames):
        yield render_frame(spec, k)


def nearest_frame(t: float, fps: int, num_frames: int) -> int:
    """Index of the frame (shown at k/fps) nearest to time ``t``, as `paravt.video.frames_at`
    picks it: the target is rounded to the 1/90000 s time base and ties go to the EARLIER frame."""
    ticks = round(t * _TICKS)
    q, r = divmod(ticks * fps, _TICKS)
    k = q + 1 if 2 * r > _TICKS else q
    return min(num_frames - 1, max(0, k))


def window_indices(spec: VideoSpec, start: float, end: float, nframes: int) -> tuple[int, ...]:
    """Frames that ``sample_frames(path, start, end, nframes=nframes)`` returns for this video
    (targets from `paravt.video.target_times`: t_i = start + (i + 0.5)·(end − start)/n)."""
    return tuple(
        nearest_frame(t, spec.fps, spec.num_frames) for t in target_times(start, end, nframes)
    )


def overview_indices(spec: VideoSpec, n: int) -> tuple[int, ...]:
    """Frames of a uniform n-frame overview: t_i = (i + 0.5)·D/n, nearest frame."""
    return window_indices(spec, 0.0, float(spec.duration), n)


def caught_by_overview(spec: VideoSpec, n: int) -> bool:
    frames = spec.needle_frames()
    return any(k in frames for k in overview_indices(spec, n))
