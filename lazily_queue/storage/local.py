"""In-process backends: the reference deque, and the clocks every in-process backend reads
(the topic's is :mod:`.local_topic`, the work queue's :mod:`.local_work`).

Each is synchronous (capability ``sync``); its awaitable operations complete at once
with the same results. The cells invalidate from the transitions they return, so
change them through their cell. Each keeps its own producer dedup window (capability
``dedup``; ``dedup=`` bounds it), aged on the monotonic clock. The deque stamps each
element's enqueue time with its ``clock`` (seconds, as ``time.time``) when given one;
without it enqueue times are unknown (stamp 0) and a push reads no clock.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..core.dedup import DedupLimits, DedupWindow
from ..core.fifo import Fifo
from ..core.ids import Run
from ..core.push_options import PushOptions
from ..core.queue import QueuePopError, QueuePushError
from .attempts import check_timeout
from .capabilities import StorageCapabilities

T = TypeVar("T")

Clock = Callable[[], float]


def _elapsed_ms() -> int:
    """Milliseconds on the monotonic clock: a window's age, unmoved by clock steps."""
    return int(time.monotonic() * 1000)


def _ms(clock: Clock) -> Callable[[], int]:
    """``clock`` (seconds) read in whole milliseconds (the stamps of a FIFO's ids)."""
    def read() -> int:
        return int(clock() * 1000)
    return read


class VecDequeStorage(Fifo[T]):
    """The default QueueCell backend: a deque, unbounded or bounded with reject.

    Declares ``sync``, ``peek`` and ``reporting_ops`` (the cell's fast path). A subclass
    that changes ``try_push`` or ``try_pop`` must declare capabilities without
    ``reporting_ops``, or the cell's fast path bypasses its methods.
    """

    __slots__ = ("dedup",)

    capabilities = StorageCapabilities(sync=True, peek=True, reporting_ops=True, dedup=True,
                                       messages=True, headers=True, scheduling=True)

    def __init__(self, capacity: int | None = None, elements: Iterable[T] = (), *,
                 dedup: DedupLimits | None = None, clock: Clock | None = None) -> None:
        super().__init__(capacity, elements, clock=None if clock is None else _ms(clock))
        self.dedup: DedupWindow[str] = DedupWindow(dedup)

    async def offer_once(
        self, value: T, msg_id: str, *, timeout: float | None = None
    ) -> QueuePushError | None:
        if timeout is not None:
            check_timeout(timeout)
        now = _elapsed_ms()
        if self.dedup.lookup(msg_id, now)[0]:
            return None
        err = self.try_push(value)
        if err is None:
            self.dedup.record(msg_id, None, now)
        return err

    async def offer(self, value: T, *, timeout: float | None = None) -> QueuePushError | None:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_push(value)

    def now_ms(self) -> int:
        """The time delayed elements are due on: the clock's, else ``time.time``'s (ms)."""
        clock = self._clock
        return int(time.time() * 1000) if clock is None else clock()

    def promote_now(self) -> int:
        """Make the delayed elements due now poppable (:mod:`..core.fifo_delayed`)."""
        pre = self.len()
        n = self.promote_due(self.now_ms())
        if n:
            self._promoted(pre, n)
        return n

    def _promoted(self, pre: int, n: int) -> None:
        """``n`` elements fell due at length ``pre`` (an observable deque reports them)."""

    def try_pop(self) -> T | QueuePopError:
        if self._delayed:
            self.promote_now()
        return super().try_pop()

    def pop_stamped(self, n: int) -> tuple[list[T], list[Run]] | QueuePopError:
        if self._delayed:
            self.promote_now()
        return super().pop_stamped(n)

    def pop_headers(
        self, n: int
    ) -> tuple[list[T], list[Run], list[list[Any]]] | QueuePopError:
        if self._delayed:
            self.promote_now()
        return super().pop_headers(n)

    async def offer_options(self, value: T, options: PushOptions, *,
                            timeout: float | None = None) -> QueuePushError | None:
        """A push with ``options`` combined (``msg_id``, ``headers``, a delivery time; a
        ``ttl_ms`` needs an expiring deque): the cell checked them."""
        if timeout is not None:
            check_timeout(timeout)
        if self._delayed:
            self.promote_now()
        now = _elapsed_ms()
        msg_id = options.msg_id
        if msg_id is not None and self.dedup.lookup(msg_id, now)[0]:
            return None
        due = options.due_ms(self.now_ms()) if options.delayed else None
        err = self._push_options(value, options, due)
        if err is None and msg_id is not None:
            self.dedup.record(msg_id, None, now)
        return err

    def _push_options(self, value: T, options: PushOptions,
                      due: int | None) -> QueuePushError | None:
        clock = self._clock
        stamp = self._tail_stamp if clock is None else clock()
        if due is not None and due <= self.now_ms():
            due = None
        return self.push_headers(value, stamp, options.headers, due)

    async def poll_headers(
        self, n: int, *, timeout: float | None = None
    ) -> tuple[list[T], list[Run], list[list[Any]]] | QueuePopError:
        if timeout is not None:
            check_timeout(timeout)
        return self.pop_headers(n)

    async def unpoll_headers(
        self, values: list[T], runs: list[Run], headers: list[list[Any]], *,
        timeout: float | None = None,
    ) -> None:
        if timeout is not None:
            check_timeout(timeout)
        self.unpop_stamped(values, runs, [(i, h) for i, h in headers])

    async def poll(self, *, timeout: float | None = None) -> T | QueuePopError:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_pop()

    async def close(self, *, timeout: float | None = None) -> None:
        if timeout is not None:
            check_timeout(timeout)
        self.try_close()

    async def poll_many(self, n: int, *, timeout: float | None = None) -> list[T] | QueuePopError:
        if timeout is not None:
            check_timeout(timeout)
        return self.pop_many(n)

    async def unpoll(self, values: list[T], *, timeout: float | None = None) -> None:
        if timeout is not None:
            check_timeout(timeout)
        for value in reversed(values):
            self.push_front(value)

    async def poll_stamped(
        self, n: int, *, timeout: float | None = None
    ) -> tuple[list[T], list[Run]] | QueuePopError:
        if timeout is not None:
            check_timeout(timeout)
        return self.pop_stamped(n)

    async def unpoll_stamped(
        self, values: list[T], runs: list[Run], *, timeout: float | None = None
    ) -> None:
        if timeout is not None:
            check_timeout(timeout)
        self.unpop_stamped(values, runs)
