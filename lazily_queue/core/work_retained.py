"""A work queue's pending FIFO that starts with a run of never-delivered items held as
plain values: what a consumer group declared at a topic's head (or an old offset) holds.

:class:`RetainedPending` is a ``deque`` of :class:`~.work_items.PendingItem` in this
order: the items put at its front (a release), then the *run* (values of consecutive
item ids from ``first``, each with ``attempts == 0``), then the items appended after it
(later feeds, nacks, redrives). Its length, emptiness, ``popleft``, ``[0]``, ``append``,
``appendleft``, ``extend`` and ``clear`` cost O(1) per item whatever the run's length: an
item of the run becomes a :class:`PendingItem` only when it leaves the head (or
``[0]`` reads it). Iterating lists every item; any other ``deque`` operation first turns
the run into items (:meth:`RetainedPending.flatten`) and then acts as a plain ``deque``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, repeat
from typing import Any, SupportsIndex, overload

from .work_items import PendingItem


class PendingCopy(Sequence[PendingItem]):
    """A copy of a :class:`RetainedPending`'s items in order, as a snapshot takes it:
    copies of its lists and of its run's values (one slice, no call per item); the
    run's items are made as they are read (where the snapshot is encoded)."""

    __slots__ = ("_back", "_first", "_front", "_values")

    def __init__(self, front: list[PendingItem], first: int, values: list[Any],
                 back: list[PendingItem]) -> None:
        self._front, self._first, self._values, self._back = front, first, values, back

    def __len__(self) -> int:
        return len(self._front) + len(self._values) + len(self._back)

    def __iter__(self) -> Iterator[PendingItem]:
        ids = range(self._first, self._first + len(self._values))
        return chain(self._front, map(PendingItem, ids, self._values, repeat(0)), self._back)

    @overload
    def __getitem__(self, index: int) -> PendingItem: ...

    @overload
    def __getitem__(self, index: slice) -> list[PendingItem]: ...

    def __getitem__(self, index: int | slice) -> PendingItem | list[PendingItem]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError("PendingCopy index out of range")
        front, values = self._front, self._values
        if i < len(front):
            return front[i]
        i -= len(front)
        if i < len(values):
            return PendingItem(self._first + i, values[i], 0)
        return self._back[i - len(values)]


class RetainedPending(deque[PendingItem]):
    """Pending items led by a run of values with consecutive ids (module docstring)."""

    __slots__ = ("_back", "_first", "_pos", "_run")

    def __init__(self, items: Iterable[PendingItem] = ()) -> None:
        """``items``, as a ``deque`` of them (a copy of one is made so)."""
        self._run: list[Any] | None = None
        self._first = self._pos = 0
        self._back: deque[PendingItem] = deque()
        super().__init__(items)

    @classmethod
    def of_run(cls, values: list[Any], first: int) -> RetainedPending:
        """The run ``values`` (the list is kept, not copied) numbered from ``first``."""
        pending = cls()
        pending._run = values if values else None
        pending._first = first
        return pending

    @classmethod
    def restored(cls, front: list[PendingItem], first: int, values: list[Any],
                 back: list[PendingItem]) -> RetainedPending:
        """The items ``front``, then the run ``values`` (kept, not copied) numbered from
        ``first``, then the items ``back``: what :meth:`run_record` took apart."""
        pending = cls(front)
        if values:
            pending._run, pending._first = values, first
            pending._back.extend(back)
        else:
            deque.extend(pending, back)
        return pending

    def run_record(self, shared_from: int | None = None
                   ) -> tuple[list[PendingItem], list[Any]] | None:
        """The pending items as a snapshot gives them (``None`` without a run): the
        items outside the run in order, and the run as ``[at, first, count, values]``
        (it comes after ``at`` of those items, its ids are ``first..first + count - 1``,
        ``values`` copies the values of those below ``shared_from``, of all when it is
        ``None``: the owner holds the others). The never-delivered items just before
        the run that continue it (its head as ``[0]`` read it, or released unstarted)
        are given as its own: the form does not depend on what was read."""
        run = self._run
        if run is None:
            return None
        first, end = self._first + self._pos, self._first + len(run)
        front = list(super().__iter__())
        lead: list[Any] = []
        while front and front[-1].attempts == 0 and front[-1].item_id == first - 1:
            lead.append(front.pop().value)
            first -= 1
        lead.reverse()
        cut = end if shared_from is None else max(first, min(end, shared_from))
        values = lead[:cut - first] + run[self._pos:max(self._pos, cut - self._first)]
        return [*front, *self._back], [len(front), first, end - first, values]

    def run_len(self) -> int:
        """Items of the run not yet taken."""
        return 0 if self._run is None else len(self._run) - self._pos

    def run_at_head(self) -> tuple[int, int] | None:
        """``(first id, end id)`` of the run's items when they lead the FIFO, else
        ``None``."""
        if self._run is None or super().__len__():
            return None
        return self._first + self._pos, self._first + len(self._run)

    def drop_run_head(self, n: int) -> None:
        """Remove the first ``n`` items of the run (at most all of them)."""
        run = self._run
        if run is None or n <= 0:
            return
        end = min(len(run), self._pos + n)
        run[self._pos:end] = [None] * (end - self._pos)  # the values are gone
        self._pos = end
        if end == len(run):
            self._end_run()

    def min_id(self) -> int | None:
        """The least item id held (``None`` when empty), without listing the run."""
        ids = [i.item_id for i in chain(super().__iter__(), self._back)]
        if self._run is not None:
            ids.append(self._first + self._pos)
        return min(ids, default=None)

    def _take_run(self) -> PendingItem:
        run = self._run
        assert run is not None
        pos = self._pos
        item = PendingItem(self._first + pos, run[pos], 0)
        run[pos] = None  # the value now lives in its item only
        self._pos = pos + 1
        if self._pos == len(run):
            self._end_run()
        return item

    def _end_run(self, items: Iterable[PendingItem] = ()) -> None:
        """The run is over (its rest is ``items``): what was appended after it follows."""
        self._run = None
        super().extend(items)
        super().extend(self._back)
        self._back.clear()

    def records(self) -> Sequence[PendingItem]:
        """A copy of the items in order for a snapshot (:class:`PendingCopy`): no call
        per item of the run."""
        run = self._run
        if run is None:
            return list(self)
        return PendingCopy(list(super().__iter__()), self._first + self._pos,
                           run[self._pos:], list(self._back))

    def flatten(self) -> None:
        """Turn the run into items: a plain ``deque`` of the same items from now on."""
        if self._run is None:
            return
        self._end_run([PendingItem(self._first + i, self._run[i], 0)
                       for i in range(self._pos, len(self._run))])

    # -- the operations a work queue uses, O(1) per item ----------------------------------

    def __len__(self) -> int:
        return super().__len__() + self.run_len() + len(self._back)

    def __iter__(self) -> Iterator[PendingItem]:
        run = self._run
        if run is None:
            return super().__iter__()
        first, pos = self._first, self._pos
        return chain(super().__iter__(),
                     (PendingItem(first + i, run[i], 0) for i in range(pos, len(run))),
                     self._back)

    def __getitem__(self, index: SupportsIndex) -> PendingItem:  # type: ignore[override]
        if index.__index__() == 0 and self._run is not None and not super().__len__():
            super().appendleft(self._take_run())  # the head, made once: ``[0] is [0]``
        elif index.__index__() != 0:
            self.flatten()
        return super().__getitem__(index)

    def popleft(self) -> PendingItem:
        if super().__len__():
            return super().popleft()
        if self._run is not None:
            return self._take_run()
        return super().popleft()  # empty: IndexError, as a deque's

    def append(self, item: PendingItem) -> None:
        if self._run is None:
            super().append(item)
        else:
            self._back.append(item)

    def appendleft(self, item: PendingItem) -> None:
        super().appendleft(item)

    def extend(self, items: Iterable[PendingItem]) -> None:
        if self._run is None:
            super().extend(items)
        else:
            self._back.extend(items)

    def clear(self) -> None:
        self._run = None
        self._back.clear()
        super().clear()

    def __repr__(self) -> str:
        return f"RetainedPending(len={len(self)}, run={self.run_len()})"

    # -- anything else: the run becomes items first ---------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        return deque, (list(self),)

    def __iadd__(self, items: Iterable[PendingItem]) -> RetainedPending:
        self.extend(items)
        return self

    __hash__ = None


def _flattening(name: str) -> Callable[..., Any]:
    """``deque``'s method ``name``, acting once the run is made items."""
    plain = getattr(deque, name)

    def method(self: RetainedPending, *args: Any) -> Any:
        self.flatten()
        return plain(self, *args)

    method.__name__ = method.__qualname__ = name
    return method


#: The other ``deque`` operations (none is used by apply): each makes the run items first.
for _name in ("__imul__", "__reversed__", "__contains__", "__eq__", "__setitem__",
              "__delitem__", "pop", "extendleft", "insert", "remove", "rotate", "index",
              "count", "reverse"):
    setattr(RetainedPending, _name, _flattening(_name))
del _name


def pending_records(pending: deque[PendingItem]) -> Sequence[PendingItem]:
    """A copy of ``pending``'s items in order, for a snapshot."""
    return pending.records() if isinstance(pending, RetainedPending) else list(pending)


def min_pending_id(pending: deque[PendingItem]) -> int | None:
    """The least item id of ``pending`` (``None`` when empty), without listing a run."""
    if isinstance(pending, RetainedPending):
        return pending.min_id()
    return min((i.item_id for i in pending), default=None)
