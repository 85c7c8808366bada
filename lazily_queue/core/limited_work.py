"""The work queue of a cell declared with :class:`~.limits.Limits`.

The limits count the items the queue holds: pending and in flight (dead letters are
not counted), by number and by bytes (:func:`~.limits.value_size` of each value). A
push that would break a limit is refused under ``reject``
(:class:`~lazily_queue.errors.LimitExceeded`, nothing changes); under ``drop_oldest``
the oldest *pending* items leave first (leased items are never dropped), each counted
(reason ``"drop_oldest"``), and when the pending items are not enough to make room
(the leases hold it) the push is refused as under ``reject``. Items coming back (a
nack, an expired lease, a redrive of dead letters) are never refused or dropped: the
queue may so hold more than its limits for a while.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from typing import Any

from ..errors import LimitExceeded, UnsupportedOperation
from .limits import DROP_OLDEST, RULES, Limits, value_size
from .work import WorkQueueCore, WorkTransition, change_mask
from .work_items import DeadLetterReason, Delivery

_NONE: deque[int] = deque()


class LimitedWorkQueue(WorkQueueCore):
    """A work queue with limits (module docstring)."""

    __slots__ = ("dropped", "held_bytes", "limits", "sizes")

    def __init__(self, visibility_timeout: float, max_deliveries: int = 3, *,
                 limits: Limits, first_item_id: int = 0) -> None:
        super().__init__(visibility_timeout, max_deliveries, first_item_id=first_item_id)
        self.limits = limits
        #: The size of each item held (pending or in flight), by item id.
        self.sizes: dict[int, int] = {}
        self.held_bytes = 0
        self.dropped: dict[str, int] = {}

    @classmethod
    def limited(cls, core: WorkQueueCore, limits: Limits) -> LimitedWorkQueue:
        """The work queue ``core`` holds, under ``limits``."""
        limited = cls(core.visibility_timeout, core.max_deliveries, limits=limits)
        restored = WorkQueueCore.from_snapshot(core.snapshot())
        limited._pending, limited._in_flight = restored._pending, restored._in_flight
        limited._dead = restored._dead
        limited._next_item_id, limited._next_delivery_id = core.next_ids()
        limited.load_stamps(core.stamps())
        for item in limited._pending:
            limited._hold(item.item_id, value_size(item.value))
        for delivery in limited._in_flight.values():
            limited._hold(delivery.item_id, value_size(delivery.value))
        return limited

    def __repr__(self) -> str:
        return (f"LimitedWorkQueue(pending={len(self._pending)}, "
                f"in_flight={len(self._in_flight)}, {self.limits.describe()})")

    def _hold(self, item_id: int, size: int) -> None:
        self.sizes[item_id] = size
        self.held_bytes += size

    def _release(self, item_id: int) -> None:
        self.held_bytes -= self.sizes.pop(item_id, 0)

    def held(self) -> int:
        return len(self._pending) + len(self._in_flight)

    def push_scheduled(self, value: Any, stamp: int | None = None, **schedule: Any) -> Any:
        """Not offered: a scheduled item would escape the limits."""
        raise UnsupportedOperation("priority, delay and not_before are not offered on a work "
                                   "queue with limits yet; push without them")

    def pending_sizes(self) -> deque[int]:
        """The sizes of the pending items, oldest first."""
        return deque(self.sizes[item.item_id] for item in self._pending)

    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    def room_for(self, size: int) -> tuple[str, int] | None:
        """``None`` when an item of ``size`` bytes fits now; else the limit it breaks and
        how many oldest pending items must leave (``-1``: it cannot fit by dropping, or
        the policy is ``reject``)."""
        count, held = self.held(), self.held_bytes
        found = None
        for name, rule in RULES.items():
            if rule(self.limits, count, held, size, _NONE) != 0:
                found = name
                break
        if found is None:
            return None
        if self.limits.overflow != DROP_OLDEST:
            return found, -1
        sizes = deque(self.sizes[item.item_id] for item in self._pending)
        need = 0
        for name, rule in RULES.items():
            k = rule(self.limits, count, held, size, sizes)
            if k is None or k > len(sizes):
                return name, -1
            need = max(need, k)
        return found, need

    def is_full(self) -> bool:
        """Whether a push of a one-byte item would be refused."""
        over = self.room_for(1)
        return over is not None and over[1] < 0

    def push(self, value: Any, stamp: int | None = None) -> WorkTransition[int]:
        size = value_size(value)
        over = self.room_for(size)
        before = self._counts()
        if over is not None:
            limit, drop = over
            if drop < 0:
                bound = self.limits.max_bytes if limit == "max_bytes" else self.limits.max_length
                raise LimitExceeded(
                    f"work queue is full: its {limit} limit of {bound} refused the push "
                    f"({self.held()} items of {self.held_bytes} bytes held, pending and in "
                    "flight); wait for room (push(..., wait=True)), work faster, raise the "
                    "limit, or declare it with overflow='drop_oldest'",
                    cell="work_queue", limit=limit, value=bound)
            for _ in range(drop):
                self._release(self._pending.popleft().item_id)
            if drop:
                self.dropped[DROP_OLDEST] = self.dropped.get(DROP_OLDEST, 0) + drop
        item_id = super().push(value, stamp).result
        self._hold(item_id, size)
        return WorkTransition(item_id, change_mask(before, self._counts()))

    def ack(self, worker: str, delivery_id: int) -> WorkTransition[bool]:
        delivery = self._in_flight.get(delivery_id) if isinstance(delivery_id, int) else None
        transition = super().ack(worker, delivery_id)
        if transition.result and delivery is not None:
            self._release(delivery.item_id)
        return transition

    def _fail(self, delivery: Delivery, reason: DeadLetterReason, now: float | None = None,
              delay: float | None = None) -> None:
        super()._fail(delivery, reason, now, delay)
        if delivery.attempt >= self.max_deliveries:  # dead letters are not held
            self._release(delivery.item_id)

    def redrive(self, item_ids: Collection[int] | None = None) -> WorkTransition[int]:
        wanted = None if item_ids is None else set(item_ids)
        coming = [letter for letter in self._dead if wanted is None or letter.item_id in wanted]
        transition = super().redrive(item_ids)
        if transition.result:
            for letter in coming:
                self._hold(letter.item_id, value_size(letter.value))
        return transition

    def purge(self, *, dead_letters: bool = False) -> WorkTransition[int]:
        leaving = [] if dead_letters else [item.item_id for item in self._pending]
        transition = super().purge(dead_letters=dead_letters)
        for item_id in leaving:
            self._release(item_id)
        return transition
