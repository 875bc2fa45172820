"""Rows → what the trainers and the episode consume.

`to_chat_messages` decodes every video part through `paravt.video.sample_frames` (the episode's
own sampler), so the text's `<video>` markers and the frames line up one to one and SFT sees the
frames the policy sees at rollout. A part spanning the whole video is the overview and uses
``max_pixels``; any other window is a crop and uses ``crop_max_pixels`` (docs/ARCHITECTURE.md §2:
overview 64×64, crops up to 224×224). Frames are read with ``whole=True``
(``paravt.video.timeline``): the rows of a build read clips and overviews of the same videos, each
video decoded once.
"""

from __future__ import annotations

import os
from pathlib import Path

from paravt.config import VideoConfig
from paravt.data.rows import Message, Row, TextPart, VideoPart
from paravt.data.screen import inside
from paravt.errors import DataError
from paravt.models.base import ChatMessage
from paravt.video.types import Frames

_WHOLE_TOL_S = 0.05


_V = VideoConfig()  # the defaults, written once in config


def resolve(root: str | Path, rel: str) -> Path:
    """A row's video path under ``root``; `DataError` naming it when it leaves the root (``..``,
    an absolute path elsewhere): `paravt.data.screen`'s rule, for readers without the screening."""
    path = inside(Path(root), rel)
    if path is None:
        raise DataError(
            f"video {rel!r} is outside the data root {os.path.abspath(root)}; videos are "
            "paths under it"
        )
    return path


def _decode(
    part: VideoPart,
    root: str | Path,
    duration: float,
    max_pixels: int,
    crop_max_pixels: int,
    size_factor: int,
) -> Frames:
    from paravt.video import sample_frames
    from paravt.video.usable import file_problem

    path = resolve(root, part.video)
    if (problem := file_problem(path)) is not None:
        raise DataError(
            f"video {path} of a row {problem[1]}; check the data root ({root}) or rebuild the data"
        )
    whole = part.video_start <= _WHOLE_TOL_S and abs(part.video_end - duration) <= _WHOLE_TOL_S
    return sample_frames(
        path,
        part.video_start,
        part.video_end,
        nframes=part.nframes,
        max_pixels=max_pixels if whole else crop_max_pixels,
        size_factor=size_factor,
        whole=True,
    )


def message_to_chat(
    m: Message,
    root: str | Path,
    *,
    duration: float,
    max_pixels: int,
    crop_max_pixels: int,
    size_factor: int,
) -> ChatMessage:
    if isinstance(m.content, str):
        return ChatMessage(m.role, m.content)
    texts: list[str] = []
    videos: list[Frames] = []
    for p in m.content:
        if isinstance(p, TextPart):
            texts.append(p.text)
        else:
            texts.append("<video>")
            videos.append(_decode(p, root, duration, max_pixels, crop_max_pixels, size_factor))
    return ChatMessage(m.role, "".join(texts), videos=tuple(videos))


def to_chat_messages(
    row: Row,
    root: str | Path,
    *,
    max_pixels: int = _V.overview_max_pixels,
    size_factor: int = _V.size_factor,
    crop_max_pixels: int | None = None,
) -> list[ChatMessage]:
    """The row's messages with frames decoded (assistant texts keep their ``<think>\\n`` prefix,
    see `paravt.data.schema`)."""
    crop = max_pixels if crop_max_pixels is None else crop_max_pixels
    return [
        message_to_chat(
            m,
            root,
            duration=row.extra_info.duration,
            max_pixels=max_pixels,
            crop_max_pixels=crop,
            size_factor=size_factor,
        )
        for m in row.messages
    ]
