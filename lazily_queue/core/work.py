"""Flavor-neutral WorkQueueCell rules: leases, retries, dead letters and reader masks.

State is a pending FIFO of :class:`PendingItem` (a consumer group's may start as a run
of retained values, :meth:`WorkQueueCore.take_retained`), the in-flight deliveries by
``delivery_id`` and the dead letters, plus two independent monotone counters (item ids
and delivery ids, both from 0; delivery ids are never reused). Time is always a
caller-supplied ``now``: nothing here reads a clock and nothing expires on its own.

Each pushed item may carry an enqueue stamp (milliseconds; ``push(value, stamp)``), kept
in a :class:`~.stamps.StampIndex` by item id (not part of :meth:`WorkQueueCore.snapshot`,
the spec's shape: owners keep it with :meth:`WorkQueueCore.stamps`); each delivery
carries its item's stamp as ``enqueued``.

Every mutating method returns a :class:`WorkTransition`: its result plus the mask of
reader kinds to invalidate, computed from the ``(pending, in_flight, dead)`` counts
before and after the operation (``pending_len`` / ``in_flight_len`` /
``dead_letter_len`` iff that count moved; ``is_empty`` iff pending crossed zero). A
no-op returns mask 0.

:class:`WorkQueueCore` imports nothing reactive, so a replicated state machine can run
the very same rules on every replica.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from itertools import islice
from operator import attrgetter
from typing import Any

from ..errors import InvalidConfiguration, InvalidSchedule, InvalidSnapshot, shown
from .scheduling import RetryPolicy
from .snapshot import is_int, require_map
from .stamps import StampIndex
from .work_items import (
    DeadLetter,
    DeadLetterReason,
    Delivery,
    PendingItem,
    Receipt,
    as_dicts,
    check_now,
    check_worker,
)
from .work_masks import (
    DEAD_LETTER_LEN,
    DELAYED_LEN,
    IN_FLIGHT_LEN,
    IS_EMPTY,
    PENDING_LEN,
    WorkReader,
    WorkTransition,
    change_mask,
    validate_config,
)
from .work_removals import WorkRemovals
from .work_retained import RetainedPending, pending_records
from .work_schedule import WorkSchedule
from .work_scheduled import Fitting, ScheduledWork
from .work_snapshot import WORK_SNAPSHOT_KEYS, RunValues, read_work_state
from .work_views import WorkViews

__all__ = [
    "DEAD_LETTER_LEN",
    "DELAYED_LEN",
    "IN_FLIGHT_LEN",
    "IS_EMPTY",
    "PENDING_LEN",
    "DeadLetter",
    "DeadLetterReason",
    "Delivery",
    "PendingItem",
    "Receipt",
    "WorkQueueCore",
    "WorkReader",
    "WorkTransition",
    "change_mask",
    "check_now",
    "check_worker",
    "validate_config",
]

_VALUE = attrgetter("value")


class WorkQueueCore(WorkViews, ScheduledWork, WorkRemovals):
    """The work-queue state machine: FIFO assignment with leases and a retry limit."""

    __slots__ = ("_dead", "_in_flight", "_next_delivery_id", "_next_item_id", "_pending",
                 "_sched", "_stamps", "_trim_at", "max_deliveries", "retry",
                 "visibility_timeout")

    def __init__(self, visibility_timeout: float, max_deliveries: int = 3, *,
                 first_item_id: int = 0, retry: RetryPolicy | None = None) -> None:
        """``first_item_id``: the id of the first item pushed (a consumer group numbers
        its items by their topic offsets); ``retry``: the back-off of failed items, in
        the unit of ``now`` (see :mod:`.work_schedule`)."""
        self.visibility_timeout, self.max_deliveries = validate_config(
            visibility_timeout, max_deliveries
        )
        if not is_int(first_item_id) or first_item_id < 0:
            raise InvalidConfiguration(
                f"first_item_id must be an int >= 0, got {shown(first_item_id)}")
        self._pending: deque[PendingItem] = deque()
        self._in_flight: dict[int, Delivery] = {}
        self._dead: list[DeadLetter] = []
        self._next_item_id = first_item_id
        self._next_delivery_id = 0
        self._stamps = StampIndex()
        self._trim_at = 64
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise InvalidConfiguration(f"retry must be a RetryPolicy, got {shown(retry)}")
        self.retry = retry
        #: Levels above 0, delayed items and priorities (see :mod:`.work_schedule`).
        self._sched: WorkSchedule | None = None

    def __repr__(self) -> str:
        return (
            f"WorkQueueCore(pending={len(self._pending)}, in_flight={len(self._in_flight)}, "
            f"dead={len(self._dead)})"
        )

    def _counts(self) -> tuple[int, int, int]:
        sched = self._sched
        ready = len(self._pending) + (sched.ready if sched is not None else 0)
        return ready, len(self._in_flight), len(self._dead)

    # -- operations -----------------------------------------------------------------------

    def push(self, value: Any, stamp: int | None = None) -> WorkTransition[int]:
        """Append a fresh item (enqueue ``stamp``, ms, when given) to the pending tail;
        returns its ``item_id``."""
        item_id = self._next_item_id
        self._next_item_id += 1
        if stamp is not None:
            self._note(item_id, stamp)
        was_empty = not self._pending
        self._pending.append(PendingItem(item_id, value, 0))
        return WorkTransition(item_id, PENDING_LEN | IS_EMPTY if was_empty else PENDING_LEN)

    def take_retained(self, values: list[Any], stamps: StampIndex) -> None:
        """Hold ``values`` as fresh pending items numbered from the next item id, with
        ``stamps`` (:meth:`~.stamps.StampIndex.between` of their ids): as many pushes of
        them with their stamps would, in one step (the values are a run of a
        :class:`~.work_retained.RetainedPending`). Only on a queue that never held an
        item (``ValueError`` otherwise)."""
        first = self._next_item_id
        if self._pending or self._in_flight or self._dead or self._sched or self._stamps:
            raise ValueError("take_retained needs a work queue that never held an item")
        self._pending = RetainedPending.of_run(values, first)
        self._next_item_id = first + len(values)
        self._stamps = stamps
        trim_at = self._trim_at
        while len(stamps) > trim_at:  # where the pushes' own trims would have left it
            trim_at = 2 * (trim_at + 1)
        self._trim_at = trim_at

    def claim(self, worker: str, now: float) -> WorkTransition[Delivery | None]:
        """Lease the oldest pending item to ``worker`` until ``now + visibility_timeout``."""
        check_worker(worker)
        check_now(now)
        if self._sched is not None:
            many = self._claim_scheduled(worker, now, 1)
            return WorkTransition(many.result[0] if many.result else None, many.mask)
        if not self._pending:
            return WorkTransition(None, 0)
        item = self._pending.popleft()
        delivery = Delivery(
            self._next_delivery_id, item.item_id, item.value, worker,
            item.attempts + 1, now + self.visibility_timeout, self.stamp_of(item.item_id),
        )
        self._next_delivery_id += 1
        self._in_flight[delivery.delivery_id] = delivery
        mask = PENDING_LEN | IN_FLIGHT_LEN
        return WorkTransition(delivery, mask if self._pending else mask | IS_EMPTY)

    def claim_many(self, worker: str, now: float, n: int, fitting: Fitting | None = None
                   ) -> WorkTransition[list[Delivery]]:
        """Lease up to ``n`` of the oldest pending items to ``worker``, in order (an
        empty list when nothing is pending); with ``fitting``, no more than it answers
        (:data:`~.work_scheduled.Fitting`)."""
        if not is_int(n) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {shown(n)}")
        check_worker(worker)
        check_now(now)
        if self._sched is not None:
            return self._claim_scheduled(worker, now, n, fitting)
        pending, in_flight = self._pending, self._in_flight
        take = min(n, len(pending))
        if fitting is not None and take:
            take = fitting(map(_VALUE, islice(pending, take)))
        if not take:
            return WorkTransition([], 0)
        deadline = now + self.visibility_timeout
        first = self._next_delivery_id
        leased: list[Delivery] = []
        for delivery_id in range(first, first + take):
            item = pending.popleft()
            delivery = Delivery(delivery_id, item.item_id, item.value, worker,
                                item.attempts + 1, deadline, self.stamp_of(item.item_id))
            in_flight[delivery_id] = delivery
            leased.append(delivery)
        self._next_delivery_id = first + take
        mask = PENDING_LEN | IN_FLIGHT_LEN
        return WorkTransition(leased, mask if pending else mask | IS_EMPTY)

    def release(self, worker: str, delivery_ids: list[int]) -> WorkTransition[int]:
        """Give back live deliveries owned by ``worker`` that it never started: each item
        returns to the pending head, in the given order, and the lease does not count as
        an attempt. Returns how many were released (others are skipped)."""
        if not isinstance(delivery_ids, list):
            raise TypeError(f"delivery_ids must be a list, got {type(delivery_ids).__name__}")
        owned = [d for i in dict.fromkeys(delivery_ids) if (d := self._owned(worker, i))]
        if not owned:
            return WorkTransition(0, 0)
        before, sched = self._counts(), self._sched
        for delivery in reversed(owned):
            del self._in_flight[delivery.delivery_id]
            item = PendingItem(delivery.item_id, delivery.value, delivery.attempt - 1)
            if sched is not None:
                sched.add_ready(item, self._pending, front=True)
            else:
                self._pending.appendleft(item)
        return WorkTransition(len(owned), change_mask(before, self._counts()))

    def _owned(self, worker: str, delivery_id: int) -> Delivery | None:
        check_worker(worker)
        if not is_int(delivery_id):
            raise TypeError(f"delivery_id must be an int, got {type(delivery_id).__name__}")
        delivery = self._in_flight.get(delivery_id)
        if delivery is None or delivery.worker != worker:
            return None
        return delivery

    def ack(self, worker: str, delivery_id: int) -> WorkTransition[bool]:
        """Settle a live delivery owned by ``worker``; ``False`` (no change) otherwise."""
        if self._owned(worker, delivery_id) is None:
            return WorkTransition(False, 0)
        item_id = self._in_flight.pop(delivery_id).item_id
        if self._sched is not None:
            self._sched.priorities.pop(item_id, None)
        return WorkTransition(True, IN_FLIGHT_LEN)

    def nack(self, worker: str, delivery_id: int, *, now: float | None = None,
             delay: float | None = None) -> WorkTransition[bool]:
        """Fail a live delivery owned by ``worker``: requeue at its level's tail (not
        claimable before ``now + delay``, or the retry policy's back-off, when ``now`` is
        given) or dead-letter."""
        delivery = self._owned(worker, delivery_id)
        if delivery is None:
            return WorkTransition(False, 0)
        before, delayed_before = self._counts(), self._delayed_count()
        self._fail(delivery, DeadLetterReason.NACK, now, delay)
        return WorkTransition(True, self._moved(before, delayed_before))

    def reap_expired(self, now: float) -> WorkTransition[int]:
        """Fail every delivery with ``deadline < now``, in ascending ``delivery_id``."""
        check_now(now)
        expired = [d for d in self._in_flight.values() if d.deadline < now]
        if not expired:
            return WorkTransition(0, 0)
        before, delayed_before = self._counts(), self._delayed_count()
        for delivery in sorted(expired, key=lambda d: d.delivery_id):
            self._fail(delivery, DeadLetterReason.EXPIRED, now)
        return WorkTransition(len(expired), self._moved(before, delayed_before))

    def _fail(self, delivery: Delivery, reason: DeadLetterReason, now: float | None = None,
              delay: float | None = None) -> None:
        del self._in_flight[delivery.delivery_id]
        if delivery.attempt < self.max_deliveries:
            item = PendingItem(delivery.item_id, delivery.value, delivery.attempt)
            if delay is None and self.retry is not None:
                delay = self.retry.delay(delivery.attempt)
            if delay and now is not None:
                self._schedule().delay(item, now + delay)
            elif self._sched is not None:
                self._sched.add_ready(item, self._pending)
            else:
                self._pending.append(item)
        else:
            self._dead.append(
                DeadLetter(delivery.item_id, delivery.value, delivery.attempt, reason)
            )

    def extend_lease(self, worker: str, delivery_id: int, now: float) -> WorkTransition[bool]:
        """Move an owned lease's deadline to ``now + visibility_timeout``; counts unchanged."""
        check_now(now)
        delivery = self._owned(worker, delivery_id)
        if delivery is None:
            return WorkTransition(False, 0)
        self._in_flight[delivery_id] = Delivery(
            delivery.delivery_id, delivery.item_id, delivery.value, delivery.worker,
            delivery.attempt, now + self.visibility_timeout, delivery.enqueued,
        )
        return WorkTransition(True, 0)

    # -- snapshot -------------------------------------------------------------------------

    def snapshot(self, records: Callable[[Sequence[Any]], Any] = as_dicts, *,
                 run: bool = False, shared_from: int | None = None) -> dict[str, Any]:
        """The whole state (configuration and counters included) as plain data: the
        spec's keys, plus ``retry`` and ``schedule`` when the queue has them. The pending
        items, deliveries and dead letters are given as ``records(copy)``: a copied list
        (the pending items: a copied sequence, :func:`~.work_retained.pending_records`)
        of frozen records; by default their :func:`as_dicts`. With ``run``, a run of
        retained values (:meth:`take_retained`) is given as ``run``, not as items
        (:mod:`.work_snapshot`; the values of ids from ``shared_from`` on left out)."""
        pending = self._pending
        split = (pending.run_record(shared_from)
                 if run and isinstance(pending, RetainedPending) else None)
        doc = {
            "visibility_timeout": self.visibility_timeout,
            "max_deliveries": self.max_deliveries,
            "next_item_id": self._next_item_id,
            "next_delivery_id": self._next_delivery_id,
            "pending": records(pending_records(pending) if split is None else split[0]),
            "in_flight": records(list(self._in_flight.values())),
            "dead_letters": records(list(self._dead)),
        }
        if split is not None:
            doc["run"] = split[1]
        return self._snapshot_schedule(doc)

    @classmethod
    def from_snapshot(cls, snapshot: Mapping[str, Any], run_values: RunValues | None = None
                      ) -> WorkQueueCore:
        """Restore :meth:`snapshot` output (a ``run`` as a run again, the values it left
        out from ``run_values``); raises :class:`InvalidSnapshot` when inconsistent."""
        extra = (set(snapshot) & {"retry", "schedule", "run"}
                 if isinstance(snapshot, Mapping) else set())
        data = require_map("work queue snapshot", snapshot, WORK_SNAPSHOT_KEYS | extra)
        try:
            retry = RetryPolicy.from_list(data["retry"]) if "retry" in data else None
            core = cls(data["visibility_timeout"], data["max_deliveries"], retry=retry)
        except (InvalidConfiguration, InvalidSchedule) as exc:
            raise InvalidSnapshot(f"work queue snapshot: {exc}") from None
        state = read_work_state(data, run_values)
        if state.run is None:
            core._pending.extend(state.pending)
        else:
            at, first, values = state.run
            core._pending = RetainedPending.restored(state.pending[:at], first, values,
                                                     state.pending[at:])
        core._in_flight.update(state.in_flight)
        core._dead.extend(state.dead_letters)
        core._next_item_id, core._next_delivery_id = state.next_item_id, state.next_delivery_id
        core._restore_schedule(data, state)
        return core
