"""The reference FIFO: an unbounded or bounded deque with reject.

Plain state with no reactive parts: the Raft state machine keeps its queues in it, and
the local backend (:class:`~lazily_queue.storage.local.VecDequeStorage`) is this FIFO
behind the storage seam.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Generic, NamedTuple, TypeVar

from .queue import (
    EMPTY,
    HEAD,
    IS_EMPTY,
    IS_FULL,
    LEN,
    QueuePopError,
    QueuePushError,
    validate_capacity,
)

T = TypeVar("T")

_FULL = QueuePushError.Full
_PUSH_CLOSED = QueuePushError.Closed
_EMPTY = QueuePopError.Empty
_POP_CLOSED = QueuePopError.Closed

Report = Callable[[int], None]
"""``report(mask)``: the reader kinds one successful push or pop invalidates."""


class FifoOps(NamedTuple, Generic[T]):
    """``try_push`` / ``try_pop`` of one FIFO that report each successful transition."""

    try_push: Callable[[T], QueuePushError | None]
    try_pop: Callable[[], T | QueuePopError]


class Fifo(Generic[T]):
    """FIFO over ``collections.deque``; at capacity ``try_push`` rejects with ``Full``."""

    __slots__ = ("_capacity", "_closed", "_items")

    def __init__(self, capacity: int | None = None, elements: Iterable[T] = ()) -> None:
        self._capacity = validate_capacity(capacity)
        self._items: deque[T] = deque(elements)
        self._closed = False
        if self._capacity is not None and len(self._items) > self._capacity:
            raise ValueError(
                f"{len(self._items)} initial elements exceed capacity {self._capacity}"
            )

    @classmethod
    def restored(cls, capacity: int | None, elements: Iterable[T], closed: bool) -> Fifo[T]:
        """The queue a snapshot describes. It may hold more than ``capacity``: elements
        returned to the head (:meth:`push_front`) are never refused."""
        fifo: Fifo[T] = cls(capacity)
        for value in reversed(list(elements)):
            fifo.push_front(value)
        if closed:
            fifo.try_close()
        return fifo

    def __repr__(self) -> str:
        return f"{type(self).__name__}(len={len(self._items)}, capacity={self._capacity})"

    def try_push(self, value: T) -> QueuePushError | None:
        """Append ``value``; ``Closed`` is checked before ``Full``."""
        if self._closed:
            return _PUSH_CLOSED
        if self._capacity is not None and len(self._items) >= self._capacity:
            return _FULL
        self._items.append(value)
        return None

    def try_pop(self) -> T | QueuePopError:
        """The oldest element; ``Empty`` while open, ``Closed`` once closed and drained."""
        if self._items:
            return self._items.popleft()
        return _POP_CLOSED if self._closed else _EMPTY

    def pop_many(self, n: int) -> list[T] | QueuePopError:
        """Up to ``n`` oldest elements (a non-empty list), or ``Empty`` / ``Closed``."""
        items = self._items
        if not items:
            return _POP_CLOSED if self._closed else _EMPTY
        return [items.popleft() for _ in range(min(n, len(items)))]

    def try_close(self) -> None:
        """Close for pushes; idempotent and terminal."""
        self._closed = True

    def push_front(self, value: T) -> None:
        """Return ``value`` to the head (an element whose receiver went away).

        Capacity and the closed flag are not checked: the element was in the queue. A
        bounded queue can so hold more than its capacity for a while; pushes are refused
        until it is below again.
        """
        self._items.appendleft(value)

    def clear(self) -> int:
        """Remove every element (an administrator's purge); returns how many there were.
        The closed flag is kept."""
        removed = len(self._items)
        self._items.clear()
        return removed

    def len(self) -> int:
        return len(self._items)

    def is_closed(self) -> bool:
        return self._closed

    def peek(self) -> Any:
        """The oldest element, or ``EMPTY``."""
        return self._items[0] if self._items else EMPTY

    def capacity(self) -> int | None:
        return self._capacity

    def elements(self) -> list[T]:
        """A FIFO-ordered copy (the snapshot form)."""
        return list(self._items)

    def reporting_ops(self, report: Report) -> FifoOps[T]:
        """``try_push`` and ``try_pop`` that call ``report(mask)`` after each success.

        ``mask`` is the invalidation set of the transition (``push_mask`` /
        ``pop_mask`` of :mod:`lazily_queue.core.queue`); failures report nothing. This
        is a shell's fast path: one call per operation, the rule inlined.
        """
        if self._capacity is None:
            return self._unbounded_ops(report)
        return self._bounded_ops(report, self._capacity)

    def _unbounded_ops(self, report: Report) -> FifoOps[T]:
        items = self._items
        first = HEAD | LEN | IS_EMPTY
        more = HEAD | LEN

        def try_push(value: T) -> QueuePushError | None:
            if self._closed:
                return _PUSH_CLOSED
            if items:
                items.append(value)
                report(LEN)
            else:
                items.append(value)
                report(first)
            return None

        def try_pop() -> T | QueuePopError:
            if not items:
                return _POP_CLOSED if self._closed else _EMPTY
            value = items.popleft()
            report(more if items else first)
            return value

        return FifoOps(try_push, try_pop)

    def _bounded_ops(self, report: Report, cap: int) -> FifoOps[T]:
        items = self._items
        first = HEAD | LEN | IS_EMPTY
        more = HEAD | LEN
        last = cap - 1
        to_full = (first if last == 0 else LEN) | IS_FULL
        from_full = (first if cap == 1 else more) | IS_FULL

        def try_push(value: T) -> QueuePushError | None:
            if self._closed:
                return _PUSH_CLOSED
            n = len(items)
            if n >= cap:
                return _FULL
            items.append(value)
            if n == last:
                report(to_full)
            elif n:
                report(LEN)
            else:
                report(first)
            return None

        def try_pop() -> T | QueuePopError:
            if not items:
                return _POP_CLOSED if self._closed else _EMPTY
            n = len(items)
            value = items.popleft()
            if n == cap:
                report(from_full)
            elif items:
                report(more)
            else:
                report(first)
            return value

        return FifoOps(try_push, try_pop)
