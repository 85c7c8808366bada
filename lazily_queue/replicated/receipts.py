"""Settlement receipts of all work queues and consumer groups, bounded in all.

Each work queue keeps the receipts of its newest settlements
(:data:`~.work_queues.RECEIPTS_KEPT`); the state machine's :class:`ReceiptLedger` also
bounds them all together to :data:`RECEIPTS_TOTAL`: past it, the oldest settled
receipt of any queue is dropped first, by settlement stamp, then by queue (in the
order the state holds them, a snapshot's too), then in its queue's order. That order is
read from the state alone, so a replica restored from a snapshot, of this version or an
older one, drops the same receipts as a live one. A settlement repeated after its
receipt was dropped is refused without a receipt, as after the per-queue bound.
"""

from __future__ import annotations

import heapq
import itertools
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

#: Settlement receipts kept by all work queues and consumer groups together (64 busy
#: queues' worth: about 6.6 MB of snapshot and 110 MB of memory when full).
RECEIPTS_TOTAL = 262_144

#: A work queue's receipts by delivery id, oldest settled first.
Receipts = OrderedDict[int, list[Any]]

#: Ranks of the receipt tables made in this process: a table made later holds a queue
#: that comes later in the state (its declaration, or its place in a snapshot).
_tables = itertools.count()


class ReceiptTable:
    """One work queue's receipts and its place in the order of all."""

    __slots__ = ("_next", "rank", "receipts")

    def __init__(self) -> None:
        self.rank = next(_tables)
        self.receipts: Receipts = OrderedDict()
        self._next = 0

    def key(self, receipt: list[Any]) -> tuple[int, int, int]:
        """The next receipt's place in the order of all (a new, later one)."""
        self._next += 1
        return (int(receipt[4]), self.rank, self._next)


#: ``(stamp, table rank, place in its table, table, receipt)``.
_Entry = tuple[int, int, int, ReceiptTable, list[Any]]


class ReceiptLedger:
    """The receipts of every work queue in the order they are dropped in.

    ``limit`` bounds their number; the ledger learns of each receipt from :meth:`keep`
    and of a queue's going from :meth:`forget`."""

    def __init__(self, limit: int = RECEIPTS_TOTAL) -> None:
        self.limit = limit
        #: Receipts kept, in all queues.
        self.total = 0
        #: A heap of entries; one whose receipt its table no longer holds (dropped, or
        #: its queue deleted) is skipped.
        self._heap: list[_Entry] = []

    def keep(self, table: ReceiptTable, receipt: list[Any], per_queue: int) -> None:
        """Add ``receipt`` (a new settlement) to ``table``, then drop the table's oldest
        past ``per_queue`` and the oldest of all past :attr:`limit`."""
        receipts = table.receipts
        key = receipt[0]
        if receipts.pop(key, None) is not None:
            self.total -= 1
        receipts[key] = receipt
        heapq.heappush(self._heap, (*table.key(receipt), table, receipt))
        self.total += 1
        while len(receipts) > per_queue:
            receipts.popitem(last=False)
            self.total -= 1
        while self.total > self.limit:
            self._drop_oldest()
        if len(self._heap) > 2 * self.total + 1024:  # skipped entries stay a fraction
            self._heap = [e for e in self._heap if _live(e)]
            heapq.heapify(self._heap)

    def forget(self, table: ReceiptTable) -> None:
        """The queue of ``table`` was deleted or replaced: its receipts no longer count."""
        self.total -= len(table.receipts)
        table.receipts.clear()

    def _drop_oldest(self) -> None:
        heap = self._heap
        while heap:
            entry = heapq.heappop(heap)
            if _live(entry):
                del entry[3].receipts[entry[4][0]]
                self.total -= 1
                return
        self.total = 0  # every receipt counted is in the heap: none is left

    def rebuild(self, tables: Iterable[ReceiptTable]) -> None:
        """Start again from restored tables (made in the state's order, their receipts
        in their queues' order); past :attr:`limit`, the oldest are dropped."""
        self._heap = [(*table.key(receipt), table, receipt)
                      for table in tables for receipt in table.receipts.values()]
        heapq.heapify(self._heap)
        self.total = len(self._heap)
        while self.total > self.limit:
            self._drop_oldest()


def _live(entry: _Entry) -> bool:
    return entry[3].receipts.get(entry[4][0]) is entry[4]


def restore_receipts(table: ReceiptTable, listed: Any, per_queue: int) -> None:
    """Fill ``table`` from a snapshot's list of a queue's receipts (its newest
    ``per_queue``)."""
    for raw in listed[-per_queue:]:
        receipt = list(raw)
        key = receipt[0] = int(receipt[0])
        table.receipts[key] = receipt
