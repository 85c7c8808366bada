"""Turns: a snapshot's capture run on the writer's thread in slices, each while the event
loop's thread waits for it, so that the two never run at once.

The capture reads the state as it stands and no more needs to be thread-safe than when
it ran on the loop: the loop hands it the turn (:meth:`Turns.give`, once per loop
iteration), and it hands the turn back once it ran about :data:`SLICE` seconds, between
two items of an iteration wrapped in :func:`paced`. Between two slices the loop goes on
(heartbeats, elections, appends, commits) but applies nothing (see
:attr:`.snapshot.SnapshotStore.capturing`), so the capture's slices all read the state
at one applied entry. Elsewhere (a capture on the caller's thread, or anything else)
:func:`paced` gives its items as they are.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

#: Seconds a capture runs before it hands the turn back to the loop.
SLICE = 0.01
#: Items between two looks at the clock.
PACE_ITEMS = 64

_local = threading.local()


def paced(items: Iterable[T]) -> Iterable[T]:
    """``items``; on the thread of a capture run by :meth:`Turns.run`, the turn goes back
    to the loop between two of them once the slice is spent."""
    turns: Turns | None = getattr(_local, "turns", None)
    return items if turns is None else turns.paced(items)


class Turns:
    """One capture's turns between the loop's thread and the writer's."""

    def __init__(self, slice_seconds: float = SLICE,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._slice = slice_seconds
        self._clock = clock
        self._go = threading.Event()  # the capture's turn
        self._back = threading.Event()  # the loop's
        self._mark = 0.0
        #: The capture ended (returned or raised).
        self.done = False
        #: Turns the loop gave.
        self.slices = 0

    def run(self, capture: Callable[[], T]) -> T:
        """``capture()`` on this (the writer's) thread, in turns; waits for the first."""
        self._go.wait()
        self._go.clear()
        self._mark = self._clock()
        _local.turns = self
        try:
            return capture()
        finally:
            _local.turns = None
            self.end()

    def end(self) -> None:
        """The capture ended (or will never run): the loop waits for it no more."""
        self.done = True
        self._back.set()

    def pause(self) -> None:
        """Hand the turn back to the loop if the slice is spent, and wait for the next."""
        if self._clock() - self._mark < self._slice:
            return
        self._back.set()
        self._go.wait()
        self._go.clear()
        self._mark = self._clock()

    def paced(self, items: Iterable[T]) -> Iterator[T]:
        for i, item in enumerate(items):
            if not i % PACE_ITEMS:
                self.pause()
            yield item

    def give(self) -> bool:
        """On the loop's thread: let the capture run one slice (blocks meanwhile);
        whether it still runs after it."""
        if self.done:
            return False
        self._go.set()
        self._back.wait()
        self._back.clear()
        self.slices += 1
        return not self.done
