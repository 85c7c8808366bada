"""Scheduled work: priority levels, delayed items and back-off, as a mixin of
:class:`~.work.WorkQueueCore` (its rules are in :mod:`.work_schedule`).

Nothing here runs on the plain path: a queue creates its :class:`~.work_schedule.WorkSchedule`
the first time an item has a priority above 0 or a due time (a push, a delayed nack, a
retry policy's back-off).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidSnapshot
from .work_items import Delivery, PendingItem, check_now
from .work_masks import DELAYED_LEN, WorkTransition, change_mask
from .work_schedule import WorkSchedule

if TYPE_CHECKING:
    from .scheduling import RetryPolicy
    from .work_snapshot import WorkState

#: How many of a claim's next items it leases, asked with their values in claim order
#: (all at once, or one at a time): a claim stops where it answers fewer.
Fitting = Callable[[Iterable[Any]], int]


class ScheduledWork:
    """The scheduling operations and readers of a work queue."""

    if not TYPE_CHECKING:  # no instance dict: the core's slots hold the state
        __slots__ = ()

    _pending: deque[PendingItem]
    _in_flight: dict[int, Delivery]
    _sched: WorkSchedule | None
    _next_item_id: int
    _next_delivery_id: int
    visibility_timeout: float
    retry: RetryPolicy | None

    def _counts(self) -> tuple[int, int, int]:
        raise NotImplementedError

    def _note(self, item_id: int, stamp: int) -> None:
        raise NotImplementedError

    def push(self, value: Any, stamp: int | None = None) -> WorkTransition[int]:
        raise NotImplementedError

    def stamp_of(self, item_id: int) -> int:
        raise NotImplementedError

    def _delayed_count(self) -> int:
        return len(self._sched.delayed) if self._sched is not None else 0

    def _moved(self, before: tuple[int, int, int], delayed_before: int) -> int:
        mask = change_mask(before, self._counts())
        return mask | DELAYED_LEN if self._delayed_count() != delayed_before else mask

    def _schedule(self) -> WorkSchedule:
        if self._sched is None:
            self._sched = WorkSchedule()
        return self._sched

    def push_scheduled(self, value: Any, stamp: int | None = None, *, priority: int = 0,
                       due: float | None = None, now: float = 0) -> WorkTransition[int]:
        """:meth:`push` at ``priority`` (a checked level 0..9), not claimable before
        ``due`` (when given and later than ``now``: the item waits among the delayed)."""
        if not priority and (due is None or due <= now):
            return self.push(value, stamp)
        before, delayed_before = self._counts(), self._delayed_count()
        item_id = self._next_item_id
        self._next_item_id += 1
        if stamp is not None:
            self._note(item_id, stamp)
        sched = self._schedule()
        if priority:
            sched.priorities[item_id] = priority
        item = PendingItem(item_id, value, 0)
        if due is not None and due > now:
            sched.delay(item, due)
        else:
            sched.add_ready(item, self._pending)
        return WorkTransition(item_id, self._moved(before, delayed_before))

    def promote_due(self, now: float) -> WorkTransition[int]:
        """Make every delayed item with ``due <= now`` claimable (at its level's tail);
        returns how many."""
        check_now(now)
        sched = self._sched
        if sched is None or not sched.delayed or sched.delayed[0][0] > now:
            return WorkTransition(0, 0)
        before = self._counts()
        moved = sched.promote(now, self._pending)
        return WorkTransition(moved, change_mask(before, self._counts()) | DELAYED_LEN)

    def _claim_scheduled(self, worker: str, now: float, n: int, fitting: Fitting | None = None
                         ) -> WorkTransition[list[Delivery]]:
        sched = self._sched
        assert sched is not None
        before, delayed_before = self._counts(), self._delayed_count()
        sched.promote(now, self._pending)
        leased: list[Delivery] = []
        deadline = now + self.visibility_timeout
        while len(leased) < n:
            item = sched.take()
            if item is None:
                if not self._pending:
                    break
                item = self._pending.popleft()
            if fitting is not None and not fitting((item.value,)):
                sched.add_ready(item, self._pending, front=True)  # back where it was
                break
            delivery = Delivery(self._next_delivery_id, item.item_id, item.value, worker,
                                item.attempts + 1, deadline, self.stamp_of(item.item_id))
            self._next_delivery_id += 1
            self._in_flight[delivery.delivery_id] = delivery
            leased.append(delivery)
        return WorkTransition(leased, self._moved(before, delayed_before))

    def delayed_len(self) -> int:
        """Items committed but not claimable before their due time."""
        return self._delayed_count()

    def next_due(self) -> float | None:
        """The earliest due time of a delayed item, or ``None``."""
        return self._sched.next_due() if self._sched is not None else None

    def delayed(self) -> list[tuple[float, PendingItem]]:
        """``(due, item)`` of the delayed items, in the order they become claimable."""
        return self._sched.delayed_items() if self._sched is not None else []

    def priority_of(self, item_id: int) -> int:
        """The priority level of an item (0 when it has none or is unknown)."""
        return self._sched.priority_of(item_id) if self._sched is not None else 0

    def pending_by_priority(self) -> dict[int, int]:
        """Claimable items of each priority level (levels with none left out)."""
        counts = self._sched.level_counts() if self._sched is not None else {}
        if self._pending:
            counts[0] = len(self._pending)
        return counts

    # -- snapshot -------------------------------------------------------------------------

    def _snapshot_schedule(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``doc`` plus ``retry`` and ``schedule`` when the queue has them."""
        if self.retry is not None:
            doc["retry"] = self.retry.to_list()
        if self._sched:
            doc["schedule"] = self._sched.snapshot()
        return doc

    def _restore_schedule(self, data: Mapping[str, Any], state: WorkState) -> None:
        """Load a snapshot's ``schedule``: its items must be none of ``state``'s, with ids
        below ``next_item_id`` (:class:`InvalidSnapshot` otherwise)."""
        if "schedule" not in data:
            return
        self._sched = sched = WorkSchedule.from_snapshot(data["schedule"])
        seen = {i.item_id for i in state.pending} | {d.item_id for d in state.dead_letters}
        seen |= {d.item_id for d in state.in_flight.values()}
        for item_id in sched.held():
            if item_id in seen or item_id >= state.next_item_id or state.holds(item_id):
                raise InvalidSnapshot(f"work queue snapshot: schedule: item_id {item_id} is "
                                      "duplicated or not below next_item_id")
            seen.add(item_id)
