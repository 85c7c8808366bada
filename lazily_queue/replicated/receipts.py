"""Settlement receipts of all work queues and consumer groups, bounded in all.

Each work queue keeps the receipts of its newest settlements
(:data:`~.work_queues.RECEIPTS_KEPT`) in a :class:`ReceiptTable`; the state machine's
:class:`ReceiptLedger` also bounds them all together to :data:`RECEIPTS_TOTAL`: past
it, the oldest settled receipt of any queue is dropped first, by settlement stamp, then
by queue (in the order the state holds them, a snapshot's too), then in its queue's
order. That order is read from the state alone, so a replica restored from a snapshot,
of this version or an older one, drops the same receipts as a live one. A settlement
repeated after its receipt was dropped is refused without a receipt, as after the
per-queue bound.

A receipt is ``[delivery_id, item_id, worker, outcome, settled_at]``, held in columns
rather than as an object: a table's ring of slots holds the ids and the stamp in 64-bit
columns (plain lists once a value does not fit), the worker as a shared (interned)
string and the outcome as a byte; a dict maps each delivery id to its slot. A slot
within the ring's span whose id the dict no longer maps to it is a hole: a receipt
dropped out of turn.
"""

from __future__ import annotations

import heapq
import itertools
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from sys import getsizeof, intern
from typing import TYPE_CHECKING, Any, TypeAlias

from ..errors import InvalidSnapshot, shown
from ..raft.snapshot_pieces import Later

if TYPE_CHECKING:
    IntColumn: TypeAlias = "array[int] | list[int]"

#: Settlement receipts kept by all work queues and consumer groups together (64 busy
#: queues' worth: about 6.6 MB of snapshot and 25 to 30 MB of memory when full).
RECEIPTS_TOTAL = 262_144

#: A receipt's outcome by its code.
_OUTCOMES = ("acked", "nacked")
_OUTCOME_CODES = {outcome: code for code, outcome in enumerate(_OUTCOMES)}

#: Ranks of the receipt tables made in this process: a table made later holds a queue
#: that comes later in the state (its declaration, or its place in a snapshot).
_tables = itertools.count()

#: One int object per slot number, shared by the index of every table.
_SLOTS: list[int] = []

#: Receipts added between two looks at the size of a table's index (``_check_index``).
_INDEX_CHECK = 256


def _ints(size: int) -> array[int]:
    return array("q", bytes(8 * size))


class ReceiptTable(Mapping[int, list[Any]]):
    """A work queue's receipts by delivery id, oldest settled first (a mapping to fresh
    ``[delivery_id, item_id, worker, outcome, settled_at]`` lists), and its place in the
    order of all: ``rank``. ``ordered``: its stamps never decrease from the first
    settled to the last, so its oldest is its first."""

    __slots__ = ("_holes", "_ids", "_index_size", "_items", "_last", "_outcomes", "_puts",
                 "_used", "_workers", "head", "listed", "ordered", "rank", "slots", "stamps")

    def __init__(self) -> None:
        self.rank = next(_tables)
        self.listed = 0  # its entries in the ledger's heap
        self.clear()

    def clear(self) -> None:
        """Drop every receipt and the room they took."""
        #: Each receipt's slot by its delivery id; ``head``: the oldest one's slot.
        self.slots: dict[int, int] = {}
        self._ids: IntColumn = _ints(0)
        self._items: IntColumn = _ints(0)
        self.stamps: IntColumn = _ints(0)
        self._workers: list[Any] = []
        self._outcomes = bytearray()
        self.head = self._used = self._holes = self._puts = self._last = 0
        self._index_size = 0
        self.ordered = True

    # -- reading ----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.slots)

    def __contains__(self, delivery_id: object) -> bool:
        return delivery_id in self.slots

    def __getitem__(self, delivery_id: int) -> list[Any]:
        return self._row(self.slots[delivery_id])

    def get(self, delivery_id: int, default: Any = None) -> Any:
        slot = self.slots.get(delivery_id)
        return default if slot is None else self._row(slot)

    def __iter__(self) -> Iterator[int]:
        ids = self._ids
        return (ids[slot] for slot in self._live(range(self._used)))

    def __reversed__(self) -> Iterator[int]:
        ids = self._ids
        return (ids[slot] for slot in self._live(range(self._used - 1, -1, -1)))

    def rows(self) -> list[list[Any]]:
        """Every receipt, oldest settled first (fresh lists: a snapshot's form)."""
        if self._holes:
            return [self._row(slot) for slot in self._live(range(self._used))]
        return list(map(list, self._copied()))

    def rows_later(self) -> Later | list[list[Any]]:
        """:meth:`rows` made where a snapshot is encoded, from copies of the columns
        taken now (when the table has no holes)."""
        return self.rows() if self._holes else Later(self._copied(), list)

    def _copied(self) -> _Copied:
        """Copies of the columns, oldest settled first (the table has no holes)."""
        head, end, cap = self.head, self.head + self._used, len(self._ids)
        first, wrapped = slice(head, min(end, cap)), slice(0, max(end - cap, 0))
        columns: tuple[Any, ...] = (
            self._ids, self._items, self._workers, self._outcomes, self.stamps)
        return _Copied(tuple(c[first] + c[wrapped] for c in columns))

    def oldest(self) -> tuple[int, int]:
        """``(slot, stamp)`` of its oldest settled receipt (the first of those settled
        at the least stamp); the table holds one."""
        head = self.head
        if self.ordered:
            return head, self.stamps[head]
        stamps = self.stamps
        slot = min(self._live(range(self._used)), key=stamps.__getitem__)
        return slot, stamps[slot]

    def _row(self, slot: int) -> list[Any]:
        return [self._ids[slot], self._items[slot], self._workers[slot],
                _OUTCOMES[self._outcomes[slot]], self.stamps[slot]]

    def _live(self, places: range) -> Iterator[int]:
        """The slots at ``places`` (counted from the first settled) holding receipts."""
        head, mask, at, ids = self.head, len(self._ids) - 1, self.slots, self._ids
        for place in places:
            slot = (head + place) & mask
            if not self._holes or at.get(ids[slot]) == slot:
                yield slot

    # -- changing ---------------------------------------------------------------------

    def put(self, delivery_id: int, item_id: int, worker: str, outcome: str,
            stamp: int) -> None:
        """Add a receipt as the last settled; its delivery id is not in the table."""
        cap = len(self._ids)
        if self._used == cap:
            self._relayout(max(8, 2 * cap if 2 * len(self.slots) >= cap else cap))
            cap = len(self._ids)
        slot = (self.head + self._used) & (cap - 1)
        try:
            self._ids[slot], self._items[slot], self.stamps[slot] = (
                delivery_id, item_id, stamp)
        except OverflowError:
            self._widen()
            self._ids[slot], self._items[slot], self.stamps[slot] = (
                delivery_id, item_id, stamp)
        self._workers[slot] = intern(worker) if type(worker) is str else worker
        self._outcomes[slot] = _OUTCOME_CODES[outcome]
        if stamp < self._last and self.slots:
            self.ordered = False
        self._last = stamp
        self._used += 1
        # Keyed by an int read back from the column, not the caller's: one decoded from
        # an installed snapshot would keep the decoded snapshot's memory from going back
        # to the system once the rest of it is freed.
        self.slots[self._ids[slot]] = _SLOTS[slot]
        self._puts += 1
        if self._puts >= _INDEX_CHECK:
            self._check_index()

    def replace(self, delivery_id: int, item_id: int, worker: str, outcome: str,
                stamp: int) -> None:
        """Change the receipt of ``delivery_id`` (held) where it stands."""
        slot = self.slots[delivery_id]
        if stamp != self.stamps[slot]:
            self.ordered = False
        try:
            self._items[slot], self.stamps[slot] = item_id, stamp
        except OverflowError:
            self._widen()
            self._items[slot], self.stamps[slot] = item_id, stamp
        self._workers[slot] = intern(worker) if type(worker) is str else worker
        self._outcomes[slot] = _OUTCOME_CODES[outcome]

    def _widen(self) -> None:
        """A value past 64 bits (from a snapshot's counters): plain lists hold them."""
        self._ids, self._items, self.stamps = (
            list(self._ids), list(self._items), list(self.stamps))

    def vacate(self, slot: int) -> None:
        """Drop the receipt at ``slot`` (:meth:`oldest`'s, or any held)."""
        at = self.slots
        del at[self._ids[slot]]
        if not at:  # empty: its room goes too
            self.clear()
            return
        if slot != self.head:
            self._holes += 1
        else:
            mask, ids = len(self._ids) - 1, self._ids
            head, used = (slot + 1) & mask, self._used - 1
            while self._holes and at.get(ids[head]) != head:
                head, used, self._holes = (head + 1) & mask, used - 1, self._holes - 1
            self.head, self._used = head, used
        if 4 * len(at) < len(self._ids) > 64:  # a quarter full: half the room
            self._relayout(len(self._ids) // 2)

    def _relayout(self, cap: int) -> None:
        """Move the receipts to a ring of ``cap`` slots (a power of two), from slot 0."""
        order = list(self._live(range(self._used)))
        if len(_SLOTS) < cap:
            _SLOTS.extend(range(len(_SLOTS), cap))
        spare = cap - len(order)

        def moved(column: IntColumn) -> IntColumn:
            values = [column[slot] for slot in order]
            if isinstance(column, list):
                return values + [0] * spare
            return array("q", values) + _ints(spare)

        self._ids, self._items, self.stamps = (
            moved(self._ids), moved(self._items), moved(self.stamps))
        self._workers = [self._workers[slot] for slot in order] + [None] * spare
        self._outcomes = bytearray(self._outcomes[slot] for slot in order) + bytes(spare)
        self.slots = dict(zip(self._ids[:len(order)], _SLOTS, strict=False))
        self.head, self._used, self._holes = 0, len(order), 0
        self._index_size = getsizeof(self.slots)

    def _check_index(self) -> None:
        """A dict that keys come and go through grows to three times their number
        whenever its room runs out, where a copy takes half that: one is made then."""
        self._puts = 0
        if getsizeof(self.slots) > self._index_size:
            self.slots = dict(self.slots)
            self._index_size = getsizeof(self.slots)


class _Copied(Sequence[tuple[Any, ...]]):
    """A table's receipts as ``(delivery_id, item_id, worker, outcome, settled_at)``
    tuples, oldest settled first, read from copies of its columns."""

    __slots__ = ("_columns",)

    def __init__(self, columns: tuple[Any, ...]) -> None:
        self._columns = columns

    def __len__(self) -> int:
        return len(self._columns[0])

    def __getitem__(self, index: Any) -> Any:  # a snapshot's encoder only iterates
        return list(self)[index]

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        ids, items, workers, outcomes, stamps = self._columns
        return zip(ids, items, workers, map(_OUTCOMES.__getitem__, outcomes), stamps,
                   strict=True)


#: ``(a stamp no later than the table's oldest receipt, table rank, table)``.
_Entry = tuple[int, int, ReceiptTable]


def _entry(table: ReceiptTable) -> _Entry:
    """``table``'s place in the order of all (it holds a receipt)."""
    return (table.oldest()[1], table.rank, table)


class ReceiptLedger:
    """The receipts of every work queue in the order they are dropped in.

    ``limit`` bounds their number; the ledger learns of each receipt from :meth:`keep`
    and of a queue's going from :meth:`forget`."""

    def __init__(self, limit: int = RECEIPTS_TOTAL) -> None:
        self.limit = limit
        #: Receipts kept, in all queues.
        self.total = 0
        #: A heap of tables: each holding receipts has an entry no later than its oldest
        #: receipt; other entries (of tables emptied, or listed again) are moved on or
        #: skipped when they come first.
        self._heap: list[_Entry] = []

    def keep(self, table: ReceiptTable, receipt: list[Any], per_queue: int) -> None:
        """Add ``receipt`` (a new settlement) to ``table``, then drop the table's oldest
        past ``per_queue`` (>= 1) and the oldest of all past :attr:`limit`."""
        key, item_id, worker, outcome, stamp = receipt
        if key in table.slots:
            table.vacate(table.slots[key])
            self.total -= 1
        while len(table.slots) >= per_queue:
            table.vacate(table.head)
            self.total -= 1
        fresh = not table.slots
        table.put(key, item_id, worker, outcome, stamp)
        self.total += 1
        if fresh or not table.listed or not table.ordered:
            heapq.heappush(self._heap, _entry(table))
            table.listed += 1
        while self.total > self.limit:
            self._drop_oldest()
        if len(self._heap) > self.total + 1024:  # entries of gone tables stay a fraction
            self._relist({id(entry[2]): entry[2] for entry in self._heap}.values())

    def forget(self, table: ReceiptTable) -> None:
        """The queue of ``table`` was deleted or replaced: its receipts no longer count."""
        self.total -= len(table)
        table.clear()

    def _drop_oldest(self) -> None:
        heap = self._heap
        while heap:
            stamp, rank, table = heap[0]
            if not table.slots:
                heapq.heappop(heap)
                table.listed -= 1
                continue
            slot, oldest = table.oldest()
            if oldest != stamp:  # its oldest went: its place is its next
                heapq.heapreplace(heap, (oldest, rank, table))
                continue
            table.vacate(slot)
            self.total -= 1
            if not table.slots:
                heapq.heappop(heap)
                table.listed -= 1
            elif table.ordered and (later := table.stamps[table.head]) != stamp:
                heapq.heapreplace(heap, (later, rank, table))
            return
        self.total = 0  # every table holding receipts is in the heap: none is left

    def rebuild(self, tables: Iterable[ReceiptTable]) -> None:
        """Start again from restored tables (made in the state's order, their receipts
        in their queues' order); past :attr:`limit`, the oldest are dropped."""
        tables = list(tables)
        self._relist(tables)
        self.total = sum(len(table) for table in tables)
        while self.total > self.limit:
            self._drop_oldest()

    def _relist(self, tables: Iterable[ReceiptTable]) -> None:
        """A heap of one entry for each of ``tables`` holding receipts."""
        self._heap = []
        for table in tables:
            table.listed = 0
            if table:
                self._heap.append(_entry(table))
                table.listed = 1
        heapq.heapify(self._heap)


def checked_receipt(raw: Any) -> list[Any]:
    """A snapshot's receipt as ``[delivery_id, item_id, worker, outcome, settled_at]``
    (int, int, str, ``"acked"`` or ``"nacked"``, int), else :class:`InvalidSnapshot`."""
    if (not isinstance(raw, list | tuple) or len(raw) != 5
            or not all(type(raw[i]) is int for i in (0, 1, 4))
            or type(raw[2]) is not str or raw[3] not in _OUTCOMES):
        raise InvalidSnapshot(
            f"a work queue's receipt must be [delivery_id, item_id, worker, outcome, "
            f"settled_at] (int, int, str, 'acked' or 'nacked', int), got {shown(raw)}")
    return list(raw)


def restore_receipts(table: ReceiptTable, listed: Any, per_queue: int) -> None:
    """Fill ``table`` from a snapshot's list of a queue's receipts (its newest
    ``per_queue``; a delivery id listed again takes the later receipt where the first
    stands)."""
    if not isinstance(listed, list):
        raise InvalidSnapshot(f"a work queue's receipts must be a list, got {shown(listed)}")
    for raw in listed[-per_queue:]:
        receipt = checked_receipt(raw)
        if receipt[0] in table:
            table.replace(*receipt)
        else:
            table.put(*receipt)
