"""Giving the C allocator's free memory back to the system after a snapshot.

Under sustained load a node's log, link buffers and batches fill and empty again: the
memory they held is freed, but glibc keeps most freed heap pages mapped, so the
process's resident size stays at its highest mark. After a snapshot the log has just
been dropped, which is the moment to hand those pages back.
:func:`release_free_memory` calls glibc's ``malloc_trim(0)`` (a no-op returning False
on other C libraries); :func:`release_after_snapshots` does so once after each
snapshot a node takes or installs. ``lazily-queue node`` runs it; a program embedding
a node may run it too (it trims the whole process, a millisecond or so per call).

And sparing the cyclic garbage collector what lives as long as the process: a full
collection traverses every tracked object, and a started node's modules, configuration
and recovered state are most of them (under a client flood on the 2-core test machine
the longest full collection took 72-207 ms, and at most 21 ms once they were spared).
:func:`freeze_started_process` collects once, then exempts what is alive
(``gc.freeze``); ``lazily-queue node`` runs it once its node has started. A program
embedding a node may do the same after its own start-up; it affects the whole process.

A backlog grows the state itself: 300,000 queued work items with small dict payloads
on three node processes made full collections of 320-460 ms, long enough for the
followers to elect a new leader. :func:`freeze_survivors` exempts what survives each
full collection, so the next one traverses only what was kept since: its pause follows
the recent growth, not the size of the state. A reference cycle exempt this way is not
collected when it becomes garbage; most of what a node keeps, its queued elements and
records, holds none and is freed by reference counting as usual, but every client link
a member served and closed does (about 80 objects, 16 kB). So once the exempt objects
have stayed :data:`THAW_GROWTH` times as many as were alive after the last full
collection that traversed them all, or than were exempt at any full collection since if
fewer (and :data:`THAW_FLOOR` more at least), for :data:`THAW_STEADY` full collections
in a row, the next full collection traverses them all again and frees the garbage among
them: what is kept as garbage stays under what is alive, at the price of one long
collection each time the exempt objects double for good.

That long collection (hundreds of milliseconds with such a backlog) must not pause a
leader: its followers would elect another. So it runs only where ``may_thaw`` allows;
while it refuses, the count goes on and each full collection asks again. ``due`` hears
after each full collection that the next one would thaw, and whether the thaw is
overdue: deferred, with the exempt objects grown :data:`THAW_FAR` times as much over
those alive as the bound allows. ``lazily-queue node`` installs it with the start-up
freeze, its hooks from :class:`~lazily_queue.thaw_guard.ThawGuard`: the only voter
thaws; the followers take turns, each starting the due collection itself in its turn;
the leader of others defers, and when overdue hands leadership to the most caught-up
follower from the event loop, then thaws as a follower.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .node import Node

#: Seconds between looks at the node's snapshot counters.
CHECK_INTERVAL = 1.0
#: Exempt objects grown to this many times those alive after the last full traversal
#: make the next full collection traverse them all again (:func:`freeze_survivors`).
THAW_GROWTH = 2
#: ... when they have also grown by this many objects at least ...
THAW_FLOOR = 100_000
#: ... after this many full collections in a row (a snapshot being installed or taken
#: doubles them for a while, and is no garbage).
THAW_STEADY = 8
#: A node that may not thaw (a leader) asks to be relieved once the exempt objects have
#: grown this many times what the bound allows over those alive.
THAW_FAR = 16


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim  # type: ignore[no-any-return]


def release_free_memory() -> bool:
    """Return the allocator's free pages to the system; False where that is not
    possible (no glibc)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def freeze_started_process() -> int:
    """Collect garbage, then exempt every object alive now from later collections;
    returns how many are exempt (module docstring)."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def freeze_survivors(*, growth: int = THAW_GROWTH, floor: int = THAW_FLOOR,
                     steady: int = THAW_STEADY, may_thaw: Callable[[], bool] | None = None,
                     far: int = THAW_FAR,
                     due: Callable[[bool], None] | None = None) -> Callable[[], None]:
    """From now on, after every full collection, exempt what survived it (``gc.freeze``),
    and let a full collection traverse the exempt objects again once ``steady`` full
    collections in a row left them ``growth`` times, and ``floor`` more than, those alive
    after the last one that did (or exempt after a later one, if fewer: module
    docstring); returns the function that stops doing so.

    ``may_thaw``, asked at the start of each full collection that would traverse them,
    defers it while it returns False (the count goes on). ``due`` is called at the end
    of each full collection after which the next one would traverse them, with whether
    one was deferred already and the exempt objects have since grown ``far`` times as
    much over those alive as the bound allows. Both run inside the collector's callback,
    so they must only read or record state, never raise."""
    for name, value, least in (("growth", growth, 1), ("floor", floor, 0),
                               ("steady", steady, 1), ("far", far, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"freeze_survivors: {name} must be a whole number of {least} "
                             f"or more, not {value!r}")
    for name, hook in (("may_thaw", may_thaw), ("due", due)):
        if hook is not None and not callable(hook):
            raise TypeError(f"freeze_survivors: {name} must be a function taking no "
                            f"argument, or None, not {hook!r}")
    alive = gc.get_freeze_count()
    past = 0  # full collections in a row that left the exempt objects past the bound
    thawed = False

    def after(phase: str, info: dict[str, int]) -> None:
        nonlocal alive, past, thawed
        if info.get("generation") != 2:
            return
        if phase == "start":
            if past >= steady and (may_thaw is None or may_thaw()):
                gc.unfreeze()  # into the oldest generation: this collection traverses them
                thawed = True
            return
        gc.freeze()
        frozen = gc.get_freeze_count()
        if thawed:
            alive, past, thawed = frozen, 0, False
            return
        alive = min(alive, frozen)  # fewer exempt (freed by reference counting): fewer alive
        bound = max(alive * growth, alive + floor)
        past = past + 1 if frozen >= bound else 0
        if past >= steady and due is not None:
            due(past > steady and frozen >= alive + far * (bound - alive))

    gc.callbacks.append(after)

    def stop() -> None:
        if after in gc.callbacks:
            gc.callbacks.remove(after)

    return stop


def _snapshots(node: Node) -> int:
    snapshots = node.driver.replica.snapshots
    return snapshots.taken + snapshots.installed


async def release_after_snapshots(node: Node, *, interval: float | None = None) -> None:
    """While ``node`` runs: :func:`release_free_memory` once after each new snapshot
    (looking every ``interval`` seconds, :data:`CHECK_INTERVAL` by default; several
    snapshots in one interval count once)."""
    seen = _snapshots(node)
    while node.running:
        await asyncio.sleep(CHECK_INTERVAL if interval is None else interval)
        if not node.running:
            return
        now = _snapshots(node)
        if now != seen:
            seen = now
            release_free_memory()
