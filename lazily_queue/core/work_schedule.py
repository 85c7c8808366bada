"""The scheduled part of a work queue: ready items above priority 0, delayed items, and
the priority of every item that has one.

A :class:`~.work.WorkQueueCore` keeps its level-0 ready items in its own deque (the
plain path) and creates a :class:`WorkSchedule` the first time an item has a priority
above 0 or a due time. Levels are claimed highest first, FIFO within a level (strict
priority: a lower level waits while a higher one has ready items). A delayed item
waits in a heap ordered by ``(due, arrival)`` and joins the tail of its level when a
claim or :meth:`~.work.WorkQueueCore.promote_due` runs at a ``now >= due``. Items keep
their priority through redelivery, release and redrive; it is forgotten when the item
is acked, purged or dropped.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterator
from typing import Any

from ..errors import InvalidSnapshot
from .scheduling import MAX_PRIORITY, MIN_PRIORITY
from .snapshot import is_int, require_list, require_map
from .work_items import PendingItem


class WorkSchedule:
    """Priority levels above 0, the delayed heap and item priorities."""

    __slots__ = ("_seq", "delayed", "levels", "priorities", "ready")

    def __init__(self) -> None:
        #: Ready items of each level above 0, FIFO.
        self.levels: dict[int, deque[PendingItem]] = {}
        #: How many items ``levels`` holds.
        self.ready = 0
        #: ``(due, arrival, item)``, a heap.
        self.delayed: list[tuple[float, int, PendingItem]] = []
        #: Item id -> level, for items above level 0 (pending, in flight or dead).
        self.priorities: dict[int, int] = {}
        self._seq = 0

    def __bool__(self) -> bool:
        return bool(self.ready or self.delayed or self.priorities)

    def priority_of(self, item_id: int) -> int:
        return self.priorities.get(item_id, 0)

    def add_ready(self, item: PendingItem, level0: deque[PendingItem], *,
                  front: bool = False) -> None:
        """Put ``item`` at the tail (or ``front``) of its level."""
        level = self.priorities.get(item.item_id, 0)
        if level == 0:
            queue = level0
        else:
            queue = self.levels.get(level) or self.levels.setdefault(level, deque())
            self.ready += 1
        if front:
            queue.appendleft(item)
        else:
            queue.append(item)

    def delay(self, item: PendingItem, due: float) -> None:
        heapq.heappush(self.delayed, (due, self._seq, item))
        self._seq += 1

    def next_due(self) -> float | None:
        return self.delayed[0][0] if self.delayed else None

    def promote(self, now: float, level0: deque[PendingItem]) -> int:
        """Move every delayed item with ``due <= now`` to its level's tail, in
        ``(due, arrival)`` order; returns how many."""
        delayed, moved = self.delayed, 0
        while delayed and delayed[0][0] <= now:
            self.add_ready(heapq.heappop(delayed)[2], level0)
            moved += 1
        return moved

    def take(self) -> PendingItem | None:
        """The oldest ready item of the highest level above 0, removed; ``None`` if none."""
        if not self.ready:
            return None
        for level in sorted(self.levels, reverse=True):
            queue = self.levels[level]
            if queue:
                self.ready -= 1
                return queue.popleft()
        return None  # pragma: no cover - ready counts the items of levels

    def ready_items(self) -> list[PendingItem]:
        """Ready items above level 0 in claim order."""
        return [item for level in sorted(self.levels, reverse=True)
                for item in self.levels[level]]

    def delayed_items(self) -> list[tuple[float, PendingItem]]:
        """Delayed items in the order they become ready."""
        return [(due, item) for due, _, item in sorted(self.delayed, key=lambda e: e[:2])]

    def level_counts(self) -> dict[int, int]:
        """Ready items of each level above 0 (levels with none left out)."""
        return {level: len(q) for level, q in self.levels.items() if q}

    def held(self) -> Iterator[int]:
        """The ids of the items this schedule holds."""
        for queue in self.levels.values():
            for item in queue:
                yield item.item_id
        for entry in self.delayed:
            yield entry[2].item_id

    def clear(self) -> int:
        """Drop every ready item above level 0 and every delayed item; returns how many."""
        dropped = self.ready + len(self.delayed)
        for item_id in list(self.held()):
            self.priorities.pop(item_id, None)
        self.levels.clear()
        self.ready = 0
        self.delayed = []
        return dropped

    # -- snapshot -------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return {
            "levels": [[level, [item.to_dict() for item in q]]
                       for level, q in sorted(self.levels.items()) if q],
            "delayed": [[due, item.to_dict()] for due, item in self.delayed_items()],
            "priorities": sorted([item_id, level] for item_id, level in self.priorities.items()),
        }

    @classmethod
    def from_snapshot(cls, raw: Any) -> WorkSchedule:
        """:meth:`snapshot` output; :class:`InvalidSnapshot` when malformed."""
        where = "work queue snapshot: schedule"
        data = require_map(where, raw, {"levels", "delayed", "priorities"})
        sched = cls()
        for pair in require_list(f"{where}: priorities", data["priorities"]):
            if (not isinstance(pair, list | tuple) or len(pair) != 2 or not is_int(pair[0])
                    or not is_int(pair[1]) or not MIN_PRIORITY < pair[1] <= MAX_PRIORITY):
                raise InvalidSnapshot(f"{where}: priorities must be [item_id, level 1..9]")
            sched.priorities[pair[0]] = pair[1]
        for entry in require_list(f"{where}: levels", data["levels"]):
            if not isinstance(entry, list | tuple) or len(entry) != 2 or not is_int(entry[0]):
                raise InvalidSnapshot(f"{where}: levels must be [level, items]")
            queue: deque[PendingItem] = deque(_item(where, raw_item)
                                              for raw_item in require_list(where, entry[1]))
            if any(sched.priority_of(i.item_id) != entry[0] for i in queue):
                raise InvalidSnapshot(f"{where}: an item of level {entry[0]} has another "
                                      "priority")
            sched.levels[entry[0]] = queue
            sched.ready += len(queue)
        for entry in require_list(f"{where}: delayed", data["delayed"]):
            due = entry[0] if isinstance(entry, list | tuple) and len(entry) == 2 else None
            if isinstance(due, bool) or not isinstance(due, int | float):
                raise InvalidSnapshot(f"{where}: delayed entries must be [due, item]")
            sched.delay(_item(where, entry[1]), due)
        return sched


def _item(where: str, raw: Any) -> PendingItem:
    rec = require_map(where, raw, {"item_id", "value", "attempts"})
    if not is_int(rec["item_id"]) or not is_int(rec["attempts"]):
        raise InvalidSnapshot(f"{where}: item_id and attempts must be ints")
    return PendingItem(rec["item_id"], rec["value"], rec["attempts"])
