"""Per-process caches of the video layer, and the decode counters.

Bounded LRU caches, all keyed by the file's identity ``(resolved path, mtime_ns, size)`` so that
a rewritten file is never served stale:

- open containers (``ContainerPool``): opening an mp4 parses its index (moov); a pooled container
  is *lent* to one caller at a time (PyAV containers are not thread-safe), returned afterwards,
  and closed when evicted;
- decoded results (``ResultCache``): ``Frames`` keyed by file identity + sampling spec, so the G
  rollouts of one prompt (same video, same overview / same window) decode once. Concurrent misses
  on one key wait for the first decoder instead of decoding again. Cached arrays are read-only;
- probe results (``InfoCache``, ``INFOS``): a probe reads the first frame and the file's tail, once
per file;
- whole videos (``paravt.video.timeline``): every frame time of a small video (``TIMELINES``),
  its decoded frames (``DECODED``, per file) and those frames converted to RGB (``FRAMES``, keyed
  by file, frame time, size and rotation), the last two bounded in bytes: the row builders read
  clips and overviews of the same video from one decode.

Everything is guarded by locks: decoding is called from worker threads (``asyncio.to_thread``).
``decode_stats()`` exposes the counters; tests use them to prove a hit does not decode.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Generic, TypeVar

import av
import av.container
import numpy as np

from paravt.errors import VideoError
from paravt.video.types import Frames, VideoInfo
from paravt.video.usable import file_problem

MAX_OPEN_CONTAINERS = 8
MAX_CACHED_RESULTS = 64
MAX_CACHED_INFOS = 1024
MAX_DECODED_BYTES = 64 * 2**20  # decoded frames of whole videos (≈ 40 videos of 270 frames 64×64)
MAX_FRAME_BYTES = 64 * 2**20  # their frames converted to RGB (5,400 frames of 64×64)

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True)
class FileKey:
    """Identity of a file's content as far as the caches care."""

    path: str  # resolved absolute path
    mtime_ns: int
    size: int


@dataclass(frozen=True)
class VideoDecodeStats:
    """Counters since process start or the last `clear_cache()`."""

    hits: int  # sample requests served from the result cache
    misses: int  # sample requests that had to decode
    decoded_frames: int  # frames the codec produced (including ones skipped on the way to a target)
    seeks: int  # container seeks
    containers_opened: int  # av.open calls (pool misses)
    converted_frames: int = 0  # frames converted to RGB (resized, rotated)
    frame_hits: int = 0  # frames served converted from the frame cache
    passes: int = 0  # whole-video decodes of the timeline path


def file_key(path: str | Path) -> FileKey:
    """Stat ``path``; `VideoError` naming what is there when it cannot be a video file (nothing,
    a symlink loop, a FIFO, a device, a directory, 0 bytes: `paravt.video.usable.file_problem`)."""
    p = Path(path)
    problem = file_problem(p)
    if problem is not None:
        missing, why = problem
        fix = (
            f"check the path (relative to {os.getcwd()!r})"
            if missing
            else "re-create or re-download it"
            if why.startswith("is empty")
            else "pass the path of a video file (e.g. .mp4)"
        )
        raise VideoError(f"video file {str(p)!r} {why}; {fix}")
    try:
        st = os.stat(p)
    except OSError as err:  # changed since file_problem looked
        raise VideoError(f"cannot stat video file {str(p)!r}: {err.strerror}") from None
    return FileKey(str(p.resolve()), st.st_mtime_ns, st.st_size)


_COUNTED = (
    "hits",
    "misses",
    "decoded_frames",
    "seeks",
    "containers_opened",
    "converted_frames",
    "frame_hits",
    "passes",
)


class _Counters:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def add(self, **deltas: int) -> None:
        with self.lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def snapshot(self) -> VideoDecodeStats:
        with self.lock:
            return VideoDecodeStats(*(getattr(self, name) for name in _COUNTED))

    def reset(self) -> None:
        with self.lock:
            for name in _COUNTED:
                setattr(self, name, 0)


COUNTERS = _Counters()


def open_container(key: FileKey) -> av.container.InputContainer:
    """Open ``key.path`` with PyAV; any PyAV/OS failure becomes a `VideoError`."""
    try:
        container = av.open(key.path, mode="r")
    except (av.error.FFmpegError, OSError, UnicodeDecodeError) as err:
        raise VideoError(
            f"{key.path!r} ({key.size} bytes) cannot be opened as a video: {err}; the file is "
            "not a "
            "video or is truncated/corrupt (a cut mp4 loses its index); re-encode or re-download it"
        ) from None
    COUNTERS.add(containers_opened=1)
    if not container.streams.video:
        container.close()
        raise VideoError(
            f"{key.path!r} has no video stream (only audio/data); pass a file with a video track"
        )
    return container


class ContainerPool:
    """Bounded LRU pool of idle open containers; `lend` gives one caller exclusive use."""

    def __init__(self, capacity: int = MAX_OPEN_CONTAINERS) -> None:
        self.capacity = capacity
        self._idle: OrderedDict[FileKey, list[av.container.InputContainer]] = OrderedDict()
        self._count = 0
        self._lock = threading.Lock()

    @contextmanager
    def lend(self, key: FileKey) -> Iterator[av.container.InputContainer]:
        container = self._take(key)
        ok = False
        try:
            yield container
            ok = True
        finally:
            if ok:
                self._give_back(key, container)
            else:  # state after an error is unknown: do not reuse it
                container.close()

    def _take(self, key: FileKey) -> av.container.InputContainer:
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                self._count -= 1
                container = idle.pop()
                if not idle:
                    del self._idle[key]
                return container
        return open_container(key)

    def _give_back(self, key: FileKey, container: av.container.InputContainer) -> None:
        evicted: list[av.container.InputContainer] = []
        with self._lock:
            self._idle.setdefault(key, []).append(container)
            self._idle.move_to_end(key)
            self._count += 1
            while self._count > self.capacity:
                old_key, old = next(iter(self._idle.items()))
                evicted.append(old.pop(0))
                self._count -= 1
                if not old:
                    del self._idle[old_key]
        for c in evicted:
            c.close()

    def clear(self) -> None:
        with self._lock:
            idle, self._idle, self._count = self._idle, OrderedDict(), 0
        for containers in idle.values():
            for c in containers:
                c.close()


class ResultCache:
    """Bounded LRU of decoded `Frames` with single-flight misses (one decode per key)."""

    def __init__(self, capacity: int = MAX_CACHED_RESULTS) -> None:
        self.capacity = capacity
        self._data: OrderedDict[Hashable, Frames] = OrderedDict()
        self._inflight: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()

    def _lookup(self, key: Hashable) -> Frames | None:
        with self._lock:
            hit = self._data.get(key)
            if hit is not None:
                self._data.move_to_end(key)
            return hit

    def get_or_compute(self, key: Hashable, compute: Callable[[], Frames]) -> Frames:
        """Return the cached value for ``key`` or compute, freeze and store it."""
        hit = self._lookup(key)
        if hit is None:
            with self._lock:
                key_lock = self._inflight.setdefault(key, threading.Lock())
            with key_lock:  # a concurrent miss on the same key waits here, then hits
                hit = self._lookup(key)
                if hit is None:
                    COUNTERS.add(misses=1)
                    try:
                        value = compute()
                        value.array.flags.writeable = False  # shared between callers
                        with self._lock:
                            self._data[key] = value
                            while len(self._data) > self.capacity:
                                self._data.popitem(last=False)
                    finally:
                        with self._lock:
                            self._inflight.pop(key, None)
                    return value
        COUNTERS.add(hits=1)
        return hit

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


class InfoCache(Generic[V]):
    """Bounded LRU of per-file values (probe results, timelines)."""

    def __init__(self, capacity: int = MAX_CACHED_INFOS) -> None:
        self.capacity = capacity
        self._data: OrderedDict[FileKey, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: FileKey) -> V | None:
        with self._lock:
            hit = self._data.get(key)
            if hit is not None:
                self._data.move_to_end(key)
            return hit

    def put(self, key: FileKey, info: V) -> None:
        with self._lock:
            self._data[key] = info
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


@dataclass(frozen=True)
class Timeline:
    """Every decodable frame of a video, as one pass over it decodes them
    (``paravt.video.timeline``)."""

    pts: tuple[int, ...]  # presentation times (stream ticks), increasing
    first_pts: int  # the stream's start (timestamps are relative to it)
    time_base: Fraction
    width: int  # as stored (before the rotation)
    height: int
    turns: int  # counter-clockwise quarter turns of the display matrix


FrameKey = tuple[FileKey, int, tuple[int, int] | None, int]  # file, pts, (h, w) or native, turns


class ByteCache(Generic[K, V]):
    """Bounded LRU whose bound is the bytes its values hold (given by the caller on ``put``)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._data: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self._bytes

    def get(self, key: K) -> V | None:
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return None
            self._data.move_to_end(key)
            return hit[0]

    def put(self, key: K, value: V, nbytes: int) -> None:
        if nbytes > self.max_bytes:
            return
        with self._lock:
            old = self._data.pop(key, None)
            self._bytes += nbytes - (old[1] if old is not None else 0)
            self._data[key] = (value, nbytes)
            while self._bytes > self.max_bytes:
                self._bytes -= self._data.popitem(last=False)[1][1]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._bytes = 0


POOL = ContainerPool()
RESULTS = ResultCache()
INFOS: InfoCache[VideoInfo] = InfoCache()
TIMELINES: InfoCache[Timeline] = InfoCache()
DECODED: ByteCache[FileKey, dict[int, av.VideoFrame]] = ByteCache(MAX_DECODED_BYTES)
FRAMES: ByteCache[FrameKey, np.ndarray] = ByteCache(MAX_FRAME_BYTES)


def decode_stats() -> VideoDecodeStats:
    """Counters of the process-wide caches (hits, misses, decoded frames, seeks, opens)."""
    return COUNTERS.snapshot()


def clear_cache() -> None:
    """Close pooled containers, drop cached results, timelines and frames, reset the counters."""
    POOL.clear()
    RESULTS.clear()
    INFOS.clear()
    TIMELINES.clear()
    DECODED.clear()
    FRAMES.clear()
    COUNTERS.reset()
