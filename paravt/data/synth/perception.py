"""What a clip's frames can support: the ONE description of a clip, shared by the simulated
pretrained base (``paravt.data.synth.base``), the SFT sub-agent target (``oracle.sub_summary``) and
the scoring of both (``paravt.repro.diagnosis``, ``paravt.repro.base_probe``).

A clip of [start, end] is ``nframes`` sampled frames (``scenes.window_indices``). Qwen3-VL merges
them in temporal patches of ``TEMPORAL_PATCH`` frames (the last frame repeated to fill the last
patch) and writes one ``<t seconds>`` stamp per patch: the mean of its two frames' times, printed
with one decimal (transformers' ``Qwen3VLProcessor._calculate_timestamps``; ``paravt.models.media``
passes the frames' real times). A description states only stamps the model SEES, of the patches
that hold a needle frame: "A large digit 7 appears from 52.5 s to 56.5 s." (first and last such
patch) or "… appears at 52.5 s." (one patch). It never states the needle's exact integer bounds,
which 16 frames 2–2.5 s apart cannot resolve. A clip whose frames miss the needle is ``NOTHING``.
"""

from __future__ import annotations

from collections.abc import Sequence

from paravt.data.synth.scenes import Needle, VideoSpec, window_indices

TEMPORAL_PATCH = (
    2  # tiny Qwen3-VL / Qwen2.5-VL vision config (paravt.models.tiny): temporal_patch_size
)
NOTHING = "Nothing brief appears in this window."


def patch_stamps(times: Sequence[float], patch: int = TEMPORAL_PATCH) -> list[float]:
    """The per-patch stamps of frames at ``times`` (the last time repeated to fill the last
    patch)."""
    ts = list(times)
    if not ts:
        return []
    ts += [ts[-1]] * (-len(ts) % patch)
    return [(ts[i] + ts[i + patch - 1]) / 2 for i in range(0, len(ts), patch)]


def stamp_text(t: float) -> str:
    """A stamp as the model reads it (``<52.5 seconds>`` → ``52.5``)."""
    return f"{t:.1f}"


def needle_stamps(
    spec: VideoSpec, start: float, end: float, nframes: int, patch: int = TEMPORAL_PATCH
) -> tuple[float, ...]:
    """Stamps of the patches of clip [start, end] that hold at least one needle frame."""
    idx = list(window_indices(spec, start, end, nframes))
    idx += [idx[-1]] * (-len(idx) % patch)
    needle = set(spec.needle_frames())
    stamps = patch_stamps([k / spec.fps for k in idx], patch)
    return tuple(
        s
        for j, s in enumerate(stamps)
        if any(k in needle for k in idx[j * patch : (j + 1) * patch])
    )


def describe_clip(spec: VideoSpec, start: float, end: float, nframes: int) -> str:
    """The frame-supported description of a clip (see the module docstring)."""
    stamps = needle_stamps(spec, start, end, nframes)
    if not stamps:
        return NOTHING
    return sighting(spec.needle, stamp_text(stamps[0]), stamp_text(stamps[-1]))


def sighting(needle: Needle, first: str, last: str) -> str:
    """The description's sentence for a needle seen from stamp ``first`` to stamp ``last``."""
    return sighted(needle.description, first, last)


def sighted(description: str, first: str, last: str) -> str:
    """The sentence for ``description`` ("a full-frame red flash") seen from ``first`` to
    ``last`` (the clip descriptions' words, and the base's habit tool results')."""
    what = description[0].upper() + description[1:]
    return (
        f"{what} appears at {first} s."
        if first == last
        else f"{what} appears from {first} s to {last} s."
    )
