"""The python tool's runtime pool: which episode owns which `SandboxRuntime`, and how many live.

Admission is ONE synchronous step under one lock (no ``await`` inside): look the episode up,
check room, pick and detach a victim, reserve the new slot. So ``max_runtimes`` holds under any
concurrency, counting sandbox PROCESSES, not only slots:

- a runtime being closed (evicted, finished, reaped) still counts until its process is gone; a
  new runtime admitted in its place first waits for that close (`Slot.after`), so the old
  process is dead before the new one starts; if the new slot goes away before that close was
  awaited (its call cancelled, say), the close is part of the slot's own, so it still counts; the
  new runtime is built before a victim is chosen (a factory that raises evicts no one);
- every slot holds at most one process (a runtime restarts only inside its own slot).

When the pool is full a new episode takes, in order: the least recently used IDLE runtime of an
owner above its fair share, then the least recently used idle runtime of anyone; when every
runtime is busy, a requester below its fair share takes the least recently used runtime of the
owner holding the most (its running call ends with an "evicted" error); otherwise the call is
refused ("busy; retry later"). The fair share is ``max_runtimes // owners`` (at least 1), owners
counted among the holders plus the requester. An owner is the part of the episode id before the
first ``/``: the tool server keys episodes ``<session>/<trajectory>``, so one caller's session (a
trajectory group) cannot keep more than its share from another under contention; in-process ids
have no ``/`` and share one owner. Idle runtimes are also released after ``idle_ttl_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from paravt.errors import ToolCallError
from paravt.tools.sandbox.runtime import SandboxRuntime


def owner_of(episode_id: str) -> str:
    """The owner an episode's runtime counts against (see the module docstring)."""
    return episode_id.partition("/")[0] if "/" in episode_id else ""


@dataclass(eq=False)
class Slot:
    """One episode's runtime. ``users``: calls admitted on it and not yet done (waiting
    included)."""

    runtime: SandboxRuntime
    loop: asyncio.AbstractEventLoop
    video: str  # the runtime is bound to this video for its whole life
    owner: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_used: float = field(default_factory=time.monotonic)
    users: int = 0
    after: asyncio.Future[None] | None = None  # a predecessor's close to await before starting
    evicted: str | None = None  # set when the pool took it away; its calls answer with this

    async def wait_predecessor(self) -> None:
        """Await the predecessor's close, at most `WAIT_S` (then `ToolCallError`: never a hang).
        ``after`` is cleared only once that close is done: a call cancelled or refused here leaves
        it for the next call (and for `RuntimePool._detach` to count)."""
        if self.after is not None:
            if not await _settled(self.after):
                raise ToolCallError(
                    f"the python runtime evicted to make room for this episode's is still "
                    f"exiting {WAIT_S:g} s after SIGKILL; retry this call later"
                )
            self.after = None


class RuntimePool:
    """Slots keyed by episode id, at most ``max_runtimes`` live sandboxes (None: unbounded)."""

    def __init__(self, *, max_runtimes: int | None, idle_ttl_s: float) -> None:
        self.max_runtimes, self.idle_ttl_s = max_runtimes, idle_ttl_s
        self._slots: dict[str, Slot] = {}
        self._closing: list[
            asyncio.Future[None]
        ] = []  # closes in flight that no new slot waits for
        self._evicted: dict[str, None] = {}  # recently evicted keys (bounded), to tell the episode
        self._lock = threading.Lock()
        self._reaper: asyncio.Task[None] | None = None

    @property
    def alive(self) -> int:
        return sum(1 for s in self._slots.values() if s.runtime.alive)

    def has(self, key: str) -> bool:
        return key in self._slots

    def get(self, key: str) -> Slot | None:
        return self._slots.get(key)

    def admit(self, key: str, video: str, make: Callable[[], SandboxRuntime]) -> Slot:
        """The episode's slot (made, with room, when new), its ``users`` counted; the caller must
        `done` it. `ToolCallError` when it is bound to another video or every runtime is busy."""
        loop = asyncio.get_running_loop()
        with self._lock:
            slot = self._slots.get(key)
            if slot is not None and slot.loop is not loop:  # the caller moved to a new event loop
                self._detach(key, "its event loop ended")
                slot = None
            if slot is not None and slot.video != video:
                raise ToolCallError(
                    "this episode id already has a python runtime bound to another video; "
                    "use a fresh episode id per episode"
                )
            if slot is None:
                runtime = (
                    make()
                )  # first: a make that raises must not have evicted anyone (it starts nothing)
                owner = owner_of(key)
                slot = Slot(runtime, loop, video, owner, after=self._make_room(owner))
                self._slots[key] = slot
            slot.users += 1
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.ensure_future(self._reap())
        return slot

    def done(self, slot: Slot) -> None:
        with self._lock:
            slot.users -= 1
            slot.last_used = time.monotonic()

    def evicted_since_last_call(self, key: str) -> bool:
        with self._lock:
            return self._evicted.pop(key, "kept") is None

    def _make_room(self, owner: str) -> asyncio.Future[None] | None:
        """Under the lock: None when there is room, else the close the new runtime must await."""
        self._closing = [f for f in self._closing if not f.done()]
        if self.max_runtimes is None or len(self._slots) + len(self._closing) < self.max_runtimes:
            return None
        if self._closing:  # a process still on its way out: the new one starts after it
            return self._closing.pop(0)
        key = self._victim(owner)
        if key is None:
            raise ToolCallError(
                f"all {len(self._slots)} python runtimes are busy (max_runtimes="
                f"{self.max_runtimes}); retry this call later"
            )
        self._evicted[key] = None
        while len(self._evicted) > 4 * self.max_runtimes:
            self._evicted.pop(next(iter(self._evicted)))
        return self._detach(key, f"evicted (max_runtimes={self.max_runtimes})", claimed=True)

    def _victim(self, owner: str) -> str | None:
        assert self.max_runtimes is not None
        held = Counter(s.owner for s in self._slots.values())
        share = max(1, self.max_runtimes // len(set(held) | {owner}))
        idle = sorted((s.last_used, k) for k, s in self._slots.items() if s.users == 0)
        for _, key in idle:
            if held[self._slots[key].owner] > share:
                return key
        if idle:
            return idle[0][1]
        biggest = max(held, key=lambda o: (held[o], o))
        if held[owner] < share and held[biggest] > share:
            return min((s.last_used, k) for k, s in self._slots.items() if s.owner == biggest)[1]
        return None

    def _detach(self, key: str, why: str, *, claimed: bool = False) -> asyncio.Future[None] | None:
        """Under the lock: remove ``key``'s slot and close its runtime now (a running call ends with
        an error). The close counts against ``max_runtimes`` until done, unless ``claimed`` (then
        the caller's new slot awaits the returned future instead). A predecessor's close the slot
        had not awaited yet is part of the returned one."""
        slot = self._slots.pop(key)
        slot.evicted = why
        slot.runtime.retire()  # now, synchronously: the close task only reaps (it may never run)
        if slot.loop is not asyncio.get_running_loop():
            slot.runtime.kill_now()  # its loop is gone: nothing there can reap it
            return None
        fut = asyncio.ensure_future(_until_gone(slot.runtime))  # counted until really gone
        if slot.after is not None and not slot.after.done():  # its runtime never started: the slot
            fut = asyncio.ensure_future(
                _both(slot.after, fut)
            )  # stood for its predecessor's process
            slot.after = None
        if not claimed:
            self._closing.append(fut)
        return fut

    async def release(self, key: str) -> None:
        """The episode ended: close its runtime (after its running call, if any)."""
        with self._lock:
            slot = self._slots.get(key)
            self._evicted.pop(key, None)
            busy = slot is not None and slot.users > 0 and slot.loop is asyncio.get_running_loop()
            fut = (
                self._detach(key, "the episode finished") if slot is not None and not busy else None
            )
        if busy:
            assert slot is not None
            async with slot.lock:
                with self._lock:
                    fut = (
                        self._detach(key, "the episode finished")
                        if self._slots.get(key) is slot
                        else None
                    )
        if fut is not None:
            await _settled(fut)  # bounded: a sandbox still exiting stays counted (`_closing`)

    async def _reap(self) -> None:
        while self._slots:
            await asyncio.sleep(min(5.0, max(0.05, self.idle_ttl_s / 4)))
            now = time.monotonic()
            with self._lock:
                for key, slot in list(self._slots.items()):
                    if slot.users == 0 and now - slot.last_used > self.idle_ttl_s:
                        self._detach(key, f"released after {self.idle_ttl_s:g} s idle")

    async def aclose(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        with self._lock:
            futs = [self._detach(key, "the tool was closed") for key in list(self._slots)]
            futs += self._closing
            self._closing = []
        for fut in futs:
            if fut is not None:
                await _settled(fut)


WAIT_S = 10.0  # the longest any caller waits for a sandbox to exit (the count itself waits on)


async def _until_gone(runtime: SandboxRuntime) -> None:
    """Close ``runtime`` (bounded) and wait until its processes are gone (not bounded: this is
    what the pool counts; callers wait on it through `_settled`)."""
    await runtime.close()
    await runtime.exited()


async def _settled(fut: asyncio.Future[None]) -> bool:
    """Wait for ``fut`` at most `WAIT_S` (a close's errors are the runtime's to log); True when
    done."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(asyncio.shield(fut), WAIT_S)
    return fut.done()


async def _both(first: asyncio.Future[None], then: asyncio.Future[None]) -> None:
    """Done when both closes are (a close's error is the runtime's to log, not the waiter's)."""
    for fut in (first, then):
        with contextlib.suppress(Exception):
            await asyncio.shield(fut)
