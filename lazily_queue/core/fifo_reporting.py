"""The reporting fast path of :class:`~.fifo.Fifo`: ``try_push`` / ``try_pop`` that
report the invalidation mask of each successful transition (a base of the FIFO), and
:func:`guarded`: such ops checking their thread first (:class:`Guard`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from threading import get_ident
from typing import TYPE_CHECKING, Generic, NamedTuple, Protocol, TypeVar

from .queue import (
    HEAD,
    IS_EMPTY,
    IS_FULL,
    LEN,
    QueuePopError,
    QueuePushError,
)

if TYPE_CHECKING:
    from .fifo import Clock

T = TypeVar("T")

_FULL = QueuePushError.Full
_PUSH_CLOSED = QueuePushError.Closed
_EMPTY = QueuePopError.Empty
_POP_CLOSED = QueuePopError.Closed

Report = Callable[[int], None]
"""``report(mask)``: the reader kinds one successful push or pop invalidates."""


class Home(Protocol):
    """What a :class:`Guard` reads at each op: ``thread``, the id
    (``threading.get_ident``) of the thread the ops run in without asking, and
    ``loop``, ``None`` while every thread runs them without asking."""

    @property
    def thread(self) -> int: ...

    @property
    def loop(self) -> object | None: ...


class Guard(NamedTuple):
    """The thread check of the fast path: an op called in another thread than
    ``home.thread`` while ``home.loop`` is set first calls ``away(op)`` (``"try_push"``,
    ``"try_pop"``), which raises to refuse it before anything changes, or returns to
    let it run."""

    home: Home
    away: Callable[[str], None]


class FifoOps(NamedTuple, Generic[T]):
    """``try_push`` / ``try_pop`` of one FIFO that report each successful transition."""

    try_push: Callable[[T], QueuePushError | None]
    try_pop: Callable[[], T | QueuePopError]


class FifoReporting(Generic[T]):
    """``reporting_ops`` of a FIFO (the FIFO sets up what is declared)."""

    if not TYPE_CHECKING:  # no instance dict: the FIFO's slots hold the state
        __slots__ = ()

    _capacity: int | None
    _items: deque[T]
    _clock: Clock | None
    _closed: bool
    _popped: int
    _tail_stamp: int

    def _close_tail(self, stamp: int) -> None:
        raise NotImplementedError

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
        clock = self._clock
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

        if clock is not None:  # a push reads the clock only when there is one
            push = try_push

            def try_push(value: T) -> QueuePushError | None:
                if (stamp := clock()) != self._tail_stamp and not self._closed:
                    self._close_tail(stamp)
                return push(value)

        def try_pop() -> T | QueuePopError:
            if not items:
                return _POP_CLOSED if self._closed else _EMPTY
            self._popped += 1
            value = items.popleft()
            report(more if items else first)
            return value

        return FifoOps(try_push, try_pop)

    def _bounded_ops(self, report: Report, cap: int) -> FifoOps[T]:
        items = self._items
        clock = self._clock
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
            if clock is not None and (stamp := clock()) != self._tail_stamp:
                self._close_tail(stamp)
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
            self._popped += 1
            value = items.popleft()
            if n == cap:
                report(from_full)
            elif items:
                report(more)
            else:
                report(first)
            return value

        return FifoOps(try_push, try_pop)


def guarded(ops: FifoOps[T], guard: Guard) -> FifoOps[T]:
    """``ops``, each checking ``guard`` first (:class:`Guard`)."""
    home, away = guard
    push, pop = ops

    def try_push(value: T) -> QueuePushError | None:
        if get_ident() != home.thread and home.loop is not None:
            away("try_push")
        return push(value)

    def try_pop() -> T | QueuePopError:
        if get_ident() != home.thread and home.loop is not None:
            away("try_pop")
        return pop()

    return FifoOps(try_push, try_pop)
