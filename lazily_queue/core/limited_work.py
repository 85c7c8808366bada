"""The work queue of a cell declared with :class:`~.limits.Limits`.

The limits count the items the queue holds: pending (claimable at any priority, or
delayed) and in flight (dead letters are not counted), by number and by bytes
(:func:`~.limits.value_size` of each value). A push that would break a limit is refused
under ``reject`` (:class:`~lazily_queue.errors.LimitExceeded`, nothing changes); under
``drop_oldest`` claimable items leave first, the least urgent first (priority 0 oldest
first, then each higher level oldest first), each counted (reason ``"drop_oldest"``);
leased and delayed items are never dropped, and when the claimable items are not enough
to make room the push is refused as under ``reject``. Items coming back (a nack, an
expired lease, a redrive of dead letters) are never refused or dropped: the queue may
so hold more than its limits for a while. A retry policy, priorities, due times, TTLs
and headers combine with the limits (every scheduled push is checked as a plain one).

Transitions that move the bytes held or the dropped count carry :data:`HELD_BYTES` /
:data:`DROPPED` in their mask (a cell's ``bytes`` and ``dropped`` readers).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from typing import Any

from ..errors import LimitExceeded
from .limits import DROP_OLDEST, RULES, Limits, value_size
from .scheduling import RetryPolicy
from .work import WorkQueueCore, WorkTransition, change_mask
from .work_items import DeadLetterReason, Delivery, PendingItem
from .work_masks import DROPPED, HELD_BYTES

_NONE: deque[int] = deque()


class LimitedWorkQueue(WorkQueueCore):
    """A work queue with limits (module docstring)."""

    __slots__ = ("dropped", "held_bytes", "limits", "sizes")

    def __init__(self, visibility_timeout: float, max_deliveries: int = 3, *,
                 limits: Limits, first_item_id: int = 0,
                 retry: RetryPolicy | None = None) -> None:
        super().__init__(visibility_timeout, max_deliveries, first_item_id=first_item_id,
                         retry=retry)
        self.limits = limits
        #: The size of each item held (pending, delayed or in flight), by item id.
        self.sizes: dict[int, int] = {}
        self.held_bytes = 0
        self.dropped: dict[str, int] = {}

    @classmethod
    def limited(cls, core: WorkQueueCore, limits: Limits) -> LimitedWorkQueue:
        """The work queue ``core`` holds (its retry policy and schedule included), under
        ``limits``."""
        limited = cls(core.visibility_timeout, core.max_deliveries, limits=limits,
                      retry=core.retry)
        restored = WorkQueueCore.from_snapshot(core.snapshot())
        limited._pending, limited._in_flight = restored._pending, restored._in_flight
        limited._dead, limited._sched = restored._dead, restored._sched
        limited._next_item_id, limited._next_delivery_id = core.next_ids()
        limited.load_stamps(core.stamps())
        for item in limited._held_items():
            limited._hold(item.item_id, value_size(item.value))
        for delivery in limited._in_flight.values():
            limited._hold(delivery.item_id, value_size(delivery.value))
        return limited

    def __repr__(self) -> str:
        return (f"LimitedWorkQueue(pending={len(self._pending)}, "
                f"in_flight={len(self._in_flight)}, {self.limits.describe()})")

    def _held_items(self) -> list[PendingItem]:
        """Every pending item, claimable or delayed."""
        sched = self._sched
        if sched is None:
            return list(self._pending)
        return [*self._pending, *sched.ready_items(), *(i for _, i in sched.delayed_items())]

    def _hold(self, item_id: int, size: int) -> None:
        self.sizes[item_id] = size
        self.held_bytes += size

    def _release(self, item_id: int) -> None:
        self.held_bytes -= self.sizes.pop(item_id, 0)

    def held(self) -> int:
        sched = self._sched
        extra = 0 if sched is None else sched.ready + len(sched.delayed)
        return len(self._pending) + len(self._in_flight) + extra

    def _droppable(self) -> list[PendingItem]:
        """The claimable items in the order ``drop_oldest`` drops them."""
        sched = self._sched
        if sched is None or not sched.ready:
            return list(self._pending)
        ordered = list(self._pending)
        for level in sorted(sched.levels):
            ordered.extend(sched.levels[level])
        return ordered

    def pending_sizes(self) -> deque[int]:
        """The sizes of the droppable items, in drop order."""
        return deque(self.sizes[item.item_id] for item in self._droppable())

    def droppable_sizes(self) -> dict[int, deque[int]]:
        """The sizes of the droppable items by priority level, each level oldest first
        (``drop_oldest`` drops the lowest level first)."""
        levels = {0: deque(self.sizes[item.item_id] for item in self._pending)}
        sched = self._sched
        if sched is not None:
            for level, items in sched.levels.items():
                levels[level] = deque(self.sizes[item.item_id] for item in items)
        return levels

    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    def room_for(self, size: int) -> tuple[str, int] | None:
        """``None`` when an item of ``size`` bytes fits now; else the limit it breaks and
        how many droppable items must leave (``-1``: it cannot fit by dropping, or the
        policy is ``reject``)."""
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
        sizes = self.pending_sizes()
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

    def _admit(self, size: int) -> None:
        """Make room for an item of ``size`` bytes (dropping under ``drop_oldest``), or
        raise :class:`LimitExceeded` changing nothing."""
        over = self.room_for(size)
        if over is None:
            return
        limit, drop = over
        if drop < 0:
            bound = self.limits.max_bytes if limit == "max_bytes" else self.limits.max_length
            raise LimitExceeded(
                f"work queue is full: its {limit} limit of {bound} refused the push "
                f"({self.held()} items of {self.held_bytes} bytes held, pending and in "
                "flight); wait for room (push(..., wait=True)), work faster, raise the "
                "limit, or declare it with overflow='drop_oldest'",
                cell="work_queue", limit=limit, value=bound)
        sched = self._sched
        for item in self._droppable()[:drop]:
            if self._pending and self._pending[0] is item:
                self._pending.popleft()
            else:
                assert sched is not None
                level = sched.priorities.pop(item.item_id)
                sched.levels[level].popleft()
                sched.ready -= 1
            self._release(item.item_id)
        if drop:
            self.dropped[DROP_OLDEST] = self.dropped.get(DROP_OLDEST, 0) + drop

    def _quota(self, before: tuple[int, int], transition: WorkTransition[Any]
               ) -> WorkTransition[Any]:
        """``transition`` with the quota bits of what moved since ``before``."""
        mask = transition.mask
        if self.held_bytes != before[0]:
            mask |= HELD_BYTES
        if self.dropped_total() != before[1]:
            mask |= DROPPED
        return transition if mask == transition.mask else WorkTransition(transition.result,
                                                                         mask)

    def _figures(self) -> tuple[int, int]:
        return self.held_bytes, self.dropped_total()

    def push(self, value: Any, stamp: int | None = None) -> WorkTransition[int]:
        size, quota = value_size(value), self._figures()
        before = self._counts()
        self._admit(size)
        item_id = super().push(value, stamp).result
        self._hold(item_id, size)
        return self._quota(quota, WorkTransition(item_id, change_mask(before, self._counts())))

    def push_scheduled(self, value: Any, stamp: int | None = None, *, priority: int = 0,
                       due: float | None = None, now: float = 0) -> WorkTransition[int]:
        if not priority and (due is None or due <= now):
            return self.push(value, stamp)
        size, quota = value_size(value), self._figures()
        before, delayed_before = self._counts(), self._delayed_count()
        self._admit(size)
        item_id = super().push_scheduled(value, stamp, priority=priority, due=due,
                                         now=now).result
        self._hold(item_id, size)
        return self._quota(quota, WorkTransition(item_id,
                                                 self._moved(before, delayed_before)))

    def ack(self, worker: str, delivery_id: int) -> WorkTransition[bool]:
        delivery = self._in_flight.get(delivery_id) if isinstance(delivery_id, int) else None
        quota = self._figures()
        transition = super().ack(worker, delivery_id)
        if transition.result and delivery is not None:
            self._release(delivery.item_id)
        return self._quota(quota, transition)

    def nack(self, worker: str, delivery_id: int, *, now: float | None = None,
             delay: float | None = None) -> WorkTransition[bool]:
        quota = self._figures()
        return self._quota(quota, super().nack(worker, delivery_id, now=now, delay=delay))

    def reap_expired(self, now: float) -> WorkTransition[int]:
        quota = self._figures()
        return self._quota(quota, super().reap_expired(now))

    def _fail(self, delivery: Delivery, reason: DeadLetterReason, now: float | None = None,
              delay: float | None = None) -> None:
        super()._fail(delivery, reason, now, delay)
        if delivery.attempt >= self.max_deliveries:  # dead letters are not held
            self._release(delivery.item_id)

    def redrive(self, item_ids: Collection[int] | None = None) -> WorkTransition[int]:
        wanted = None if item_ids is None else set(item_ids)
        coming = [letter for letter in self._dead if wanted is None or letter.item_id in wanted]
        quota = self._figures()
        transition = super().redrive(item_ids)
        if transition.result:
            for letter in coming:
                self._hold(letter.item_id, value_size(letter.value))
        return self._quota(quota, transition)

    def purge(self, *, dead_letters: bool = False) -> WorkTransition[int]:
        leaving = [] if dead_letters else [item.item_id for item in self._held_items()]
        quota = self._figures()
        transition = super().purge(dead_letters=dead_letters)
        for item_id in leaving:
            self._release(item_id)
        return self._quota(quota, transition)

    def discard_head(self) -> WorkTransition[PendingItem | None]:
        """:meth:`WorkQueueCore.discard_head`, its bytes released (an expired item)."""
        quota = self._figures()
        transition = super().discard_head()
        if transition.result is not None:
            self._release(transition.result.item_id)
        return self._quota(quota, transition)
