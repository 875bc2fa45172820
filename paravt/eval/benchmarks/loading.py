"""What every benchmark loader shares: finding the annotation file and the videos in a published
layout. Layouts are matched loosely: the first existing candidate file or directory wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from paravt.errors import DataError

LETTERS = "ABCDEFGHIJ"


def first(root: Path, candidates: Iterable[str]) -> Path | None:
    """The first path under ``root`` matching one of the glob ``candidates``, in their order."""
    for c in candidates:
        hits = sorted(root.glob(c))
        if hits:
            return hits[0]
    return None


def need(root: Path, name: str, candidates: Sequence[str]) -> Path:
    """`first`, or a `DataError` naming what was looked for."""
    p = first(root, candidates)
    if p is None:
        raise DataError(
            f"{name}: no annotation file under {root} (looked for {', '.join(candidates)}); "
            "download the benchmark's annotations into that directory"
        )
    return p


def video_path(root: Path, dirs: Sequence[str], name: str) -> Path:
    """``root/<dir>/<name>`` for the first ``dir`` where it exists, else under ``dirs[0]``."""
    for d in dirs:
        p = root / d / name
        if p.exists():
            return p
    return root / dirs[0] / name


def lettered(texts: Sequence[str]) -> tuple[str, ...]:
    """Options as "A. text", "B. text", …"""
    return tuple(f"{LETTERS[i]}. {str(t).strip()}" for i, t in enumerate(texts))
