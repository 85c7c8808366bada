"""The reference FIFO: an unbounded or bounded deque with reject.

Plain state with no reactive parts: the Raft state machine keeps its queues in it, and
the local backend (:class:`~lazily_queue.storage.local.VecDequeStorage`) is this FIFO
behind the storage seam.

Every accepted element gets the queue's next message id and an enqueue stamp: the
``stamp`` given to the push, else the FIFO's ``clock`` (milliseconds) read at the push,
else the last stamp given (0 at first). They are kept as runs (:mod:`.ids`): explicit
runs cover the oldest elements, one implicit run (the *tail*) the newest ones that
share the last stamp, so a push of the plain path allocates nothing and, without a
clock, does no work for ids.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any, Generic, TypeVar

from ..errors import shown
from . import ids
from .fifo_delayed import FifoDelayed
from .fifo_reporting import FifoOps, FifoReporting, Guard, Report, guarded
from .headers import Headers
from .ids import Run
from .queue import (
    EMPTY,
    QueuePopError,
    QueuePushError,
    validate_capacity,
)

T = TypeVar("T")

_FULL = QueuePushError.Full
_PUSH_CLOSED = QueuePushError.Closed
_EMPTY = QueuePopError.Empty
_POP_CLOSED = QueuePopError.Closed

Clock = Callable[[], int]
"""Milliseconds, read once per accepted push."""


class Fifo(FifoReporting[T], FifoDelayed[T], Generic[T]):
    """FIFO over ``collections.deque``; at capacity ``try_push`` rejects with ``Full``."""

    __slots__ = ("_capacity", "_clock", "_closed", "_delayed", "_explicit", "_headers",
                 "_items", "_popped", "_runs", "_tail_first", "_tail_stamp")

    def __init__(self, capacity: int | None = None, elements: Iterable[T] = (), *,
                 clock: Clock | None = None) -> None:
        self._capacity = validate_capacity(capacity)
        self._items: deque[T] = deque(elements)
        self._closed = False
        self._clock = clock
        #: Explicit runs over the oldest ``_explicit`` elements; the others form the
        #: tail run: ids from ``_tail_first``, stamp ``_tail_stamp``. A pop only counts
        #: itself in ``_popped``; :meth:`_sync` takes those ids off before ids are read.
        self._runs: deque[Run] = deque()
        self._explicit = 0
        self._tail_first = 0
        self._popped = 0
        self._tail_stamp = 0 if clock is None else clock()
        #: Headers by message id, of elements pushed with some (:mod:`.headers`); a
        #: popped element's entry leaves when its id is taken off the runs.
        self._headers: dict[int, Headers] = {}
        #: Delayed elements, a heap (:mod:`.fifo_delayed`); ``None`` while there are none.
        self._delayed: list[list[Any]] | None = None
        if self._capacity is not None and len(self._items) > self._capacity:
            raise ValueError(
                f"{len(self._items)} initial elements exceed capacity {self._capacity}"
            )

    @classmethod
    def restored(cls, capacity: int | None, elements: Iterable[T], closed: bool,
                 id_state: tuple[int, list[Run]] | None = None) -> Fifo[T]:
        """The queue a snapshot describes. It may hold more than ``capacity``: elements
        returned to the head (:meth:`push_front`) are never refused. ``id_state`` is
        :meth:`id_state`'s ``(next_id, runs)``; without it the elements get ids from 0,
        stamp 0. ``ValueError`` when the runs do not cover the elements."""
        fifo: Fifo[T] = cls(capacity)
        fifo.load(list(elements), id_state)
        if closed:
            fifo.try_close()
        return fifo

    def load(self, items: list[T], id_state: tuple[int, list[Run]] | None) -> None:
        """Fill this empty FIFO with a snapshot's ``items`` and ``id_state``
        (:meth:`restored`); ``ValueError`` (nothing changed) when the ids do not fit."""
        if self._items:
            raise ValueError("load fills an empty FIFO")
        if id_state is not None:
            next_id, runs = id_state
            runs = ids.checked_runs(runs)
            if ids.covered(runs) != len(items):
                raise ValueError(f"the id runs cover {ids.covered(runs)} elements, the queue "
                                 f"holds {len(items)}")
            if type(next_id) is not int or any(r[0] + r[1] > next_id for r in runs):
                raise ValueError(f"next id {shown(next_id)} is not above every id of the queue")
            self._runs.extend(runs)
            self._explicit = len(items)
            self._tail_first = next_id
        self._items.extend(items)

    def _sync(self) -> None:
        """Take the ids of the pops counted since the last call off the runs."""
        k = self._popped
        if k:
            self._popped = 0
            from_runs = min(k, self._explicit)
            taken = ids.take(self._runs, from_runs) if from_runs else []
            self._explicit -= from_runs
            if self._headers:
                if k > from_runs:
                    ids.append(taken, self._tail_first, k - from_runs, self._tail_stamp)
                self._take_headers(taken)
            self._tail_first += k - from_runs

    def _take_headers(self, runs: list[Run]) -> list[list[Any]]:
        """Remove the headers of the ids ``runs`` cover: ``[[id, headers], ...]``."""
        table = self._headers
        out: list[list[Any]] = []
        for first, count, _ in runs:
            if count > len(table):
                found = sorted(i for i in table if first <= i < first + count)
            else:
                found = [i for i in range(first, first + count) if i in table]
            out.extend([i, table.pop(i)] for i in found)
        return out

    def _next_id(self) -> int:
        self._sync()
        return self._tail_first + len(self._items) - self._explicit

    def _close_tail(self, stamp: int) -> None:
        """Make the tail run explicit; the next pushes start a tail stamped ``stamp``."""
        if self._popped:
            self._sync()
        n = len(self._items) - self._explicit
        if n:
            ids.append(self._runs, self._tail_first, n, self._tail_stamp)
            self._explicit += n
            self._tail_first += n
        self._tail_stamp = stamp

    def __repr__(self) -> str:
        return f"{type(self).__name__}(len={len(self._items)}, capacity={self._capacity})"

    def try_push(self, value: T) -> QueuePushError | None:
        """Append ``value`` stamped with the clock; ``Closed`` is checked before ``Full``."""
        clock = self._clock
        return self.push_stamped(value, self._tail_stamp if clock is None else clock())

    def push_stamped(self, value: T, stamp: int) -> QueuePushError | None:
        """Append ``value`` with enqueue stamp ``stamp``; as :meth:`try_push`."""
        if self._closed:
            return _PUSH_CLOSED
        if self._capacity is not None and len(self._items) >= self._capacity:
            return _FULL
        if stamp != self._tail_stamp:
            self._close_tail(stamp)
        self._items.append(value)
        return None

    def push_headers(self, value: T, stamp: int, headers: Headers | None,
                     due: int | None = None) -> QueuePushError | None:
        """:meth:`push_stamped` (:meth:`push_delayed` with a ``due`` time), the element's
        ``headers`` (checked; ``None``: none) kept by its id."""
        i = self._next_id()
        err = (self.push_stamped(value, stamp) if due is None
               else self.push_delayed(value, stamp, due))
        if err is None and headers:
            self._headers[i] = headers
        return err

    def pop_headers(
        self, n: int
    ) -> tuple[list[T], list[Run], list[list[Any]]] | QueuePopError:
        """:meth:`pop_stamped` and the headers of what it took (``[[id, headers], ...]``,
        only ids that have some), which leave the queue with their elements."""
        result = self._pop_stamped(n)
        if isinstance(result, QueuePopError):
            return result
        return result[0], result[1], self._take_headers(result[1]) if self._headers else []

    def headers_state(self) -> list[list[Any]]:
        """``[[id, headers], ...]`` of the elements in the queue (the snapshot form)."""
        self._sync()
        return [[i, self._headers[i]] for i in sorted(self._headers)]

    def load_headers(self, entries: list[tuple[int, Headers]]) -> None:
        """Put a snapshot's headers back (ids the queue does not hold are ignored)."""
        self._sync()
        held = {i for i, _ in ids.expand(self.id_state()[1])} | self.delayed_ids()
        self._headers = {i: h for i, h in entries if i in held}

    def try_pop(self) -> T | QueuePopError:
        """The oldest element; ``Empty`` while open, ``Closed`` once closed and drained."""
        if self._items:
            self._popped += 1
            return self._items.popleft()
        return _POP_CLOSED if self._closed and not self._delayed else _EMPTY

    def pop_many(self, n: int) -> list[T] | QueuePopError:
        """Up to ``n`` oldest elements (a non-empty list), or ``Empty`` / ``Closed``."""
        result = self.pop_stamped(n)
        return result if isinstance(result, QueuePopError) else result[0]

    def pop_stamped(self, n: int) -> tuple[list[T], list[Run]] | QueuePopError:
        """Up to ``n`` oldest elements with the runs of their ids and stamps (what
        :meth:`unpop_stamped` takes back), or ``Empty`` / ``Closed``. Their headers
        leave with them (:meth:`pop_headers` returns them)."""
        result = self._pop_stamped(n)
        if self._headers and not isinstance(result, QueuePopError):
            self._take_headers(result[1])
        return result

    def _pop_stamped(self, n: int) -> tuple[list[T], list[Run]] | QueuePopError:
        items = self._items
        if not items:
            return _POP_CLOSED if self._closed and not self._delayed else _EMPTY
        self._sync()
        k = min(n, len(items))
        from_runs = min(k, self._explicit)
        runs = ids.take(self._runs, from_runs) if from_runs else []
        self._explicit -= from_runs
        if k > from_runs:  # merged where it continues the last run: every replica's
            # answer has the same runs, however its own are split
            ids.append(runs, self._tail_first, k - from_runs, self._tail_stamp)
            self._tail_first += k - from_runs
        return [items.popleft() for _ in range(k)], runs

    def try_close(self) -> None:
        """Close for pushes; idempotent and terminal."""
        self._closed = True

    def push_front(self, value: T, stamp: int | None = None) -> None:
        """Return ``value`` to the head (an element whose receiver went away).

        Capacity and the closed flag are not checked: the element was in the queue. A
        bounded queue can so hold more than its capacity for a while; pushes are refused
        until it is below again. Without its id (see :meth:`unpop_stamped`) it gets a
        new one, stamped ``stamp`` when given (a replica gives the entry's time: the last
        stamp is not part of a snapshot), else the last stamp (the clock's when there is
        one).
        """
        i = self._next_id()
        self._close_tail(self._tail_stamp)
        self._tail_first = i + 1
        self._items.appendleft(value)
        if stamp is None:
            stamp = self._tail_stamp if self._clock is None else self._clock()
        ids.prepend(self._runs, [[i, 1, stamp]])
        self._explicit += 1

    def unpop_stamped(self, values: list[T], runs: list[Run],
                      headers: list[tuple[int, Headers]] | None = None) -> None:
        """Return ``values`` (in order) to the head with the ids and stamps their pop
        gave (:meth:`pop_stamped`), and the ``headers`` (``(id, headers)`` pairs) of
        those ids that had some; ``ValueError`` (nothing changed) when the runs do not
        cover the values or name an id never given out, or a header's id is not theirs."""
        runs = ids.checked_runs(runs)
        # Counted before any run is expanded: runs far longer than the values must cost
        # no more than their count.
        if ids.covered(runs) != len(values):
            raise ValueError(f"the id runs cover {ids.covered(runs)} elements, "
                             f"not the {len(values)} given back")
        next_id = self._next_id()
        if any(r[0] + r[1] > next_id for r in runs):
            raise ValueError(f"the id runs name ids this queue never gave "
                             f"(its next id is {next_id})")
        if headers:
            given = {i for i, _ in ids.expand(runs)}
            stray = [i for i, _ in headers if i not in given]
            if stray:
                raise ValueError(f"headers name id {stray[0]}, not one given back")
        self._items.extendleft(reversed(values))
        ids.prepend(self._runs, runs)
        self._explicit += len(values)
        if headers:
            self._headers.update(headers)

    def clear(self) -> int:
        """Remove every element, delayed ones too (an administrator's purge); returns how
        many there were. The closed flag is kept."""
        removed = len(self._items) + self.clear_delayed()
        self._tail_first = self._next_id()  # synced
        self._items.clear()
        self._runs.clear()
        self._headers.clear()
        self._explicit = 0
        return removed

    def len(self) -> int:
        return len(self._items)

    def is_closed(self) -> bool:
        return self._closed

    def peek(self) -> Any:
        """The oldest element, or ``EMPTY``."""
        return self._items[0] if self._items else EMPTY

    def head(self, n: int) -> Iterator[T]:
        """The ``n`` oldest elements (all when it holds fewer), oldest first, left in place."""
        return islice(self._items, min(n, len(self._items)))

    def holds_headers(self) -> bool:
        """Whether some element it holds came with headers."""
        return bool(self._headers)

    def capacity(self) -> int | None:
        return self._capacity

    def elements(self) -> list[T]:
        """A FIFO-ordered copy (the snapshot form)."""
        return list(self._items)

    def id_state(self) -> tuple[int, list[Run]]:
        """``(next_id, runs)``: the ids and stamps of the elements in FIFO order (the
        snapshot form; small: about a run per distinct stamp)."""
        self._sync()
        runs = [list(run) for run in self._runs]
        n = len(self._items) - self._explicit
        if n:
            ids.append(runs, self._tail_first, n, self._tail_stamp)
        return self._next_id(), runs

    def next_id(self) -> int:
        """The id the next element pushed gets (the last pushed has the one before)."""
        return self._next_id()

    def head_id(self) -> tuple[int, int] | None:
        """``(id, stamp)`` of the oldest element, or ``None`` when empty."""
        self._sync()
        if self._runs:
            return self._runs[0][0], self._runs[0][2]
        return (self._tail_first, self._tail_stamp) if self._items else None

    def head_run(self) -> tuple[int, int, int] | None:
        """``(first id, count, stamp)`` of elements at the head pushed at one stamp with
        ids in a row (a run of :meth:`id_state`), or ``None`` when empty."""
        self._sync()
        if self._runs:
            first, count, stamp = self._runs[0]
            return first, count, stamp
        n = len(self._items) - self._explicit
        return (self._tail_first, n, self._tail_stamp) if n else None


__all__ = ["Clock", "Fifo", "FifoOps", "Guard", "Report", "guarded"]
