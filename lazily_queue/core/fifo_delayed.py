"""Delayed elements of a :class:`~.fifo.Fifo` (a base of the FIFO).

A delayed push is committed at once: the element takes the queue's next message id and
its enqueue stamp then (its headers and TTL deadline are kept by that id), and waits in
a heap ordered by ``(due, id)`` until :meth:`FifoDelayed.promote_due` runs at a ``now >=
due``: then it joins the tail, the elements falling due together in ``(due, id)`` order.
Whoever owns the FIFO promotes before every take (and, replicated, at the leader's
maintenance), so the ready order is by due time (a plain push is due at its push), then
commit order. Delayed elements are not in ``len`` (:meth:`FifoDelayed.delayed_len`
counts them); a closed queue still delivers them (a pop answers ``Empty``, not
``Closed``, while some are delayed). Nothing here reads a clock: ``now`` and ``due`` are
the owner's milliseconds.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from . import ids
from .ids import Run
from .queue import QueuePushError

T = TypeVar("T")

#: ``(due, id, stamp, value)``.
Entry = list[Any]


class FifoDelayed(Generic[T]):
    """The delayed half of a FIFO (module docstring; the FIFO sets up its slots)."""

    if not TYPE_CHECKING:
        __slots__ = ()

    _items: deque[T]
    _runs: deque[Run]
    _explicit: int
    _tail_first: int
    _tail_stamp: int
    _closed: bool
    _delayed: list[Entry] | None

    def _close_tail(self, stamp: int) -> None:
        raise NotImplementedError

    def _next_id(self) -> int:
        raise NotImplementedError

    def capacity(self) -> int | None:
        raise NotImplementedError

    def _ready_ids(self, among: set[int]) -> set[int]:
        """The ids in ``among`` that ready elements hold."""
        ordered = sorted(among)
        found: set[int] = set()
        for first, count, _ in self.id_state()[1]:
            k = bisect.bisect_left(ordered, first)
            while k < len(ordered) and ordered[k] < first + count:
                found.add(ordered[k])
                k += 1
        return found

    def id_state(self) -> tuple[int, list[Run]]:
        raise NotImplementedError

    def _admit_delayed(self, value: T) -> QueuePushError | None:
        """Whether a delayed push of ``value`` is accepted now: refused as a push is
        (``Closed``, then ``Full`` while the ready elements fill a FIFO with a capacity,
        whose ``is_full`` reads the ready elements only); a due element joins even past
        the capacity (as a given-back one). A FIFO with limits counts its delayed
        elements (:meth:`~.limited_fifo.LimitedFifo._admit_delayed`)."""
        if self._closed:
            return QueuePushError.Closed
        cap = self.capacity()
        return QueuePushError.Full if cap is not None and len(self._items) >= cap else None

    def _join_tail(self, value: T, element_id: int, stamp: int) -> None:
        """Append a due element under its own id and stamp."""
        self._close_tail(self._tail_stamp)
        self._items.append(value)
        ids.append(self._runs, element_id, 1, stamp)
        self._explicit += 1

    def push_delayed(self, value: T, stamp: int, due: int) -> QueuePushError | None:
        """Commit ``value`` (enqueue stamp ``stamp``), poppable from ``due``; ``Closed``
        or ``Full`` (nothing changed) when :meth:`_admit_delayed` refuses it. Its id is
        ``next_id() - 1`` after it."""
        err = self._admit_delayed(value)
        if err is not None:
            return err
        element_id = self._next_id()
        self._close_tail(self._tail_stamp)  # the tail is empty: the id is used up
        self._tail_first = element_id + 1
        if self._delayed is None:
            self._delayed = []
        heapq.heappush(self._delayed, [due, element_id, stamp, value])
        return None

    def promote_due(self, now: int) -> int:
        """Move every delayed element with ``due <= now`` to the tail in ``(due, id)``
        order; returns how many."""
        heap = self._delayed
        n = 0
        while heap and heap[0][0] <= now:
            _, element_id, stamp, value = heapq.heappop(heap)
            self._join_tail(value, element_id, stamp)
            n += 1
        return n

    def due_len(self, now: int) -> int:
        """Delayed elements due at ``now``: what :meth:`promote_due` would move (it visits
        only those, and the heap's nodes below them)."""
        heap = self._delayed
        if not heap:
            return 0
        n, stack = 0, [0]
        while stack:
            i = stack.pop()
            if i < len(heap) and heap[i][0] <= now:
                n += 1
                stack += (2 * i + 1, 2 * i + 2)
        return n

    def delayed_len(self) -> int:
        """Elements committed and not due yet."""
        return 0 if self._delayed is None else len(self._delayed)

    def next_due(self) -> int | None:
        """The earliest due time of a delayed element, or ``None``."""
        return self._delayed[0][0] if self._delayed else None

    def delayed(self) -> list[tuple[int, int, T]]:
        """``(due, id, value)`` of the delayed elements, in the order they fall due."""
        return [(e[0], e[1], e[3]) for e in sorted(self._delayed or ())]

    def delayed_ids(self) -> set[int]:
        return {e[1] for e in self._delayed or ()}

    def delayed_state(self) -> list[Entry]:
        """``[[due, id, stamp, value], ...]`` in ``(due, id)`` order (the snapshot form)."""
        return [list(e) for e in sorted(self._delayed or ())]

    def load_delayed(self, entries: Any) -> None:
        """Put a snapshot's delayed elements back; ``ValueError`` (nothing changed) when
        an entry is malformed, names an id at or above the next id, or an id another
        element holds (delayed or ready)."""
        if type(entries) is not list:
            raise ValueError("delayed elements must be a list of [due, id, stamp, value]")
        next_id = self._next_id()
        out: list[Entry] = []
        seen: set[int] = set()
        for e in entries:
            if (type(e) is not list or len(e) != 4 or not all(type(x) is int for x in e[:3])
                    or not 0 <= e[1] < next_id):
                raise ValueError(f"a delayed element is [due, id < {next_id}, stamp, value] "
                                 f"with int due, id and stamp, not {str(e)[:60]}")
            if e[1] in seen:
                raise ValueError(f"two delayed elements have id {e[1]}; each id is one "
                                 "element's")
            seen.add(e[1])
            out.append(list(e))
        if seen and (held := self._ready_ids(seen)):
            raise ValueError(f"delayed element id {min(held)} is also a ready element's; "
                             "each id is one element's")
        heapq.heapify(out)
        self._delayed = out or None

    def clear_delayed(self) -> int:
        """Drop the delayed elements (a purge); returns how many."""
        n = self.delayed_len()
        self._delayed = None
        return n
