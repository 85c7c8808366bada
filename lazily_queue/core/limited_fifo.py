"""The FIFO of a queue declared with :class:`~.limits.Limits`.

A :class:`~.fifo.Fifo` whose pushes are checked against a :class:`~.limits.Quota`: under
``reject`` a push that would break a limit is refused (``Full``, nothing changes); under
``drop_oldest`` the oldest elements leave first (their ids are used up, as a pop's are)
and are counted as dropped. Elements given back to the head (:meth:`push_front`,
:meth:`unpop_stamped`) are never refused, as in a bounded FIFO: they were in the queue.
Delayed elements (:mod:`.fifo_delayed`) are checked when pushed: under ``reject`` the
ready and the delayed elements together stay within the limits; under ``drop_oldest`` a
delayed element that can fit is accepted and the oldest ready elements leave when it
falls due. The plain FIFO is untouched, so a queue without limits pays nothing for them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from .fifo import Clock, Fifo, FifoOps, Guard, Report
from .headers import Headers
from .ids import Run
from .limits import DROP_OLDEST, REJECT, Limits, Quota, value_size
from .queue import QueuePopError, QueuePushError

T = TypeVar("T")

_FULL = QueuePushError.Full
_CLOSED = QueuePushError.Closed


class LimitedFifo(Fifo[T]):
    """A FIFO with limits (module docstring). ``last_dropped`` is how many elements the
    last accepted push (or :meth:`promote_due`) dropped (0 under ``reject``);
    ``last_refusal`` names the limit the last refused push broke (``"max_length"`` /
    ``"max_bytes"``)."""

    def __init__(self, limits: Limits, elements: Iterable[T] = (), *,
                 clock: Clock | None = None) -> None:
        Fifo.__init__(self, None, elements, clock=clock)
        self.limit(limits)

    def limit(self, limits: Limits) -> None:
        """Start counting this FIFO's elements against ``limits``."""
        self.quota = Quota(limits, self._items)
        self.quota.delayed(value_size(e[3]) for e in self._delayed or ())
        self.last_dropped = 0
        self.last_refusal = ""

    @classmethod
    def limited(cls, fifo: Fifo[Any], limits: Limits) -> LimitedFifo[Any]:
        """The FIFO ``fifo`` describes (elements, ids, delayed elements, headers, closed
        flag) under ``limits``."""
        limited: LimitedFifo[Any] = cls(limits)
        limited.load(fifo.elements(), fifo.id_state())
        limited.load_delayed(fifo.delayed_state())
        limited.load_headers([(i, h) for i, h in fifo.headers_state()])
        if fifo.is_closed():
            limited.try_close()
        return limited

    def __repr__(self) -> str:
        return f"LimitedFifo(len={len(self._items)}, {self.quota!r})"

    def limits(self) -> Limits:
        return self.quota.limits

    def limited_fifo(self) -> LimitedFifo[T]:
        return self

    def capacity(self) -> int | None:
        """The length bound a push is refused at, ready and delayed elements counted
        (``None`` under ``drop_oldest``)."""
        limits = self.quota.limits
        return limits.max_length if limits.overflow == REJECT else None

    def is_full(self) -> bool:
        """Whether a push of the smallest element would be refused."""
        return self.quota.limits.overflow == REJECT and self.quota.is_full()

    def push_stamped(self, value: T, stamp: int) -> QueuePushError | None:
        if self._closed:
            return _CLOSED
        quota = self.quota
        size = value_size(value)
        if quota.limits.overflow == DROP_OLDEST:
            over = quota.room_for(size)
            drop = 0 if over is None else over[1]
        else:
            over = quota.check(size)
            drop = 0 if over is None else -1
        if drop < 0:
            self.last_refusal = over[0] if over is not None else ""
            return _FULL
        self._drop_oldest(drop)
        self.last_dropped = drop
        Fifo.push_stamped(self, value, stamp)
        quota.pushed(size)
        return None

    def _drop_oldest(self, n: int) -> None:
        """The ``n`` oldest ready elements leave, counted dropped (their ids used up)."""
        if n:
            Fifo.pop_stamped(self, n)
            quota = self.quota
            quota.popped(n)
            quota.count_dropped(DROP_OLDEST, n)

    def _admit_delayed(self, value: T) -> QueuePushError | None:
        """A delayed push is checked when it is made: under ``reject`` against every
        element held, ready and delayed (so they never pass a limit together); under
        ``drop_oldest`` only that it can fit at all (the oldest ready elements make room
        for it when it falls due). Accepted, it is counted as waiting."""
        if self._closed:
            return _CLOSED
        quota = self.quota
        size = value_size(value)
        over = (quota.room_for(size) if quota.limits.overflow == DROP_OLDEST
                else quota.check(size))
        if over is not None and (over[1] < 0 or quota.limits.overflow == REJECT):
            self.last_refusal = over[0]
            return _FULL
        quota.delayed((size,))
        return None

    def _join_tail(self, value: T, element_id: int, stamp: int) -> None:
        """A due element joins, never refused (it was accepted at its push); under
        ``drop_oldest`` the oldest ready elements leave first to make room (counted
        dropped, and in :attr:`last_dropped` of the promote)."""
        quota = self.quota
        size = value_size(value)
        if quota.limits.overflow == DROP_OLDEST:
            over = quota.room_for(size)
            self._drop_oldest(0 if over is None else min(max(over[1], 0), len(self._items)))
        Fifo._join_tail(self, value, element_id, stamp)
        quota.joined(size)

    def promote_due(self, now: int) -> int:
        """As the FIFO's; :attr:`last_dropped` is then how many ready elements left to
        make room for the elements that fell due."""
        dropped = self.quota.dropped.get(DROP_OLDEST, 0)
        n = Fifo.promote_due(self, now)
        self.last_dropped = self.quota.dropped.get(DROP_OLDEST, 0) - dropped
        return n

    def load_delayed(self, entries: Any) -> None:
        Fifo.load_delayed(self, entries)
        quota = self.quota
        quota.waiting = quota.waiting_bytes = 0
        quota.delayed(value_size(e[3]) for e in self.delayed_state())

    def try_pop(self) -> T | QueuePopError:
        result = Fifo.try_pop(self)
        if not isinstance(result, QueuePopError):
            self.quota.popped(1)
        return result

    def pop_stamped(self, n: int) -> tuple[list[T], list[Run]] | QueuePopError:
        result = Fifo.pop_stamped(self, n)
        if not isinstance(result, QueuePopError):
            self.quota.popped(len(result[0]))
        return result

    def pop_headers(
        self, n: int
    ) -> tuple[list[T], list[Run], list[list[Any]]] | QueuePopError:
        result = Fifo.pop_headers(self, n)
        if not isinstance(result, QueuePopError):
            self.quota.popped(len(result[0]))
        return result

    def push_front(self, value: T, stamp: int | None = None) -> None:
        Fifo.push_front(self, value, stamp)
        self.quota.returned([value])

    def unpop_stamped(self, values: list[T], runs: list[Run],
                      headers: list[tuple[int, Headers]] | None = None) -> None:
        Fifo.unpop_stamped(self, values, runs, headers)
        self.quota.returned(values)

    def load(self, items: list[T], id_state: tuple[int, list[Run]] | None) -> None:
        Fifo.load(self, items, id_state)
        self.quota.returned(items)

    def clear(self) -> int:
        removed = Fifo.clear(self)
        self.quota.cleared()
        return removed

    def reporting_ops(self, report: Report, guard: Guard | None = None) -> FifoOps[T]:
        """Not offered: a limited push may drop elements, which the fast path's masks
        do not describe."""
        raise NotImplementedError("a limited FIFO has no reporting fast path")
