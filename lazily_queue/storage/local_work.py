"""The in-process work-queue backend: a :class:`WorkQueueCore` behind the seam."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..core.dedup import DedupLimits, DedupWindow
from ..core.headers import Headers, OffsetHeaders
from ..core.work import (
    DeadLetter,
    Delivery,
    PendingItem,
    Receipt,
    WorkQueueCore,
    WorkTransition,
)
from ..core.work_options import WorkPushOptions
from ..errors import InvalidSchedule
from .attempts import check_timeout
from .capabilities import StorageCapabilities
from .local import Clock, _elapsed_ms
from .work import Settlement, WorkQueueStorage


def _time(now: float | None) -> float:
    if now is None:
        raise TypeError("a local work queue has no clock of its own: pass now (a time)")
    return now


def _scheduling_time(now: float | None) -> float:
    if now is None:
        raise InvalidSchedule("a local work queue keeps due times on the cell's clock: "
                              "construct the cell with clock= (or pass now=)")
    return now


class LocalWorkQueueStorage(WorkQueueStorage):
    """A :class:`WorkQueueCore` behind the work-queue seam (capability ``sync``).

    Its receipts name the queue ``name`` and are stamped with ``clock()`` (0.0 without
    a clock), and so are the enqueue times of its items (unknown without); settlements
    are not remembered, so a repeated one is refused.
    """

    __slots__ = ("_headers", "clock", "core", "dedup", "name")

    capabilities = StorageCapabilities(sync=True, logical_time=True, dedup=True,
                                       scheduling=True, headers=True)

    def __init__(
        self, core: WorkQueueCore, *, name: str = "work_queue", clock: Clock | None = None,
        dedup: DedupLimits | None = None,
    ) -> None:
        self.core = core
        self.dedup: DedupWindow[str] = DedupWindow(dedup)
        self.name = name
        self.clock = clock
        self._headers: OffsetHeaders | None = None

    def __repr__(self) -> str:
        return f"LocalWorkQueueStorage({self.name!r}, {self.core!r})"

    def limited_work(self) -> Any:
        """The core when it has limits (a ``LimitedWorkQueue``), else ``None``."""
        return self.core if hasattr(self.core, "held_bytes") else None

    @property
    def visibility_timeout(self) -> float:
        return self.core.visibility_timeout

    @property
    def lease_seconds(self) -> float:
        return self.core.visibility_timeout  # a local cell's clock counts seconds

    @property
    def max_deliveries(self) -> int:
        return self.core.max_deliveries

    # -- reads ---------------------------------------------------------------------------

    def pending_len(self) -> int:
        return self.core.pending_len()

    def is_empty(self) -> bool:
        return self.core.is_empty()

    def in_flight_len(self) -> int:
        return self.core.in_flight_len()

    def dead_letter_len(self) -> int:
        return self.core.dead_letter_len()

    def pending(self) -> list[PendingItem]:
        return self.core.pending()

    def in_flight(self) -> list[Delivery]:
        return self.core.in_flight()

    def dead_letters(self) -> list[DeadLetter]:
        return self.core.dead_letters()

    def in_flight_by_worker(self) -> dict[str, list[Delivery]]:
        return self.core.in_flight_by_worker()

    def snapshot(self) -> dict[str, Any]:
        return self.core.snapshot()

    def delayed_len(self) -> int:
        return self.core.delayed_len()

    def next_due(self) -> float | None:
        return self.core.next_due()

    def delayed(self) -> list[tuple[float, PendingItem]]:
        return self.core.delayed()

    def pending_by_priority(self) -> dict[int, int]:
        return self.core.pending_by_priority()

    # -- synchronous operations ----------------------------------------------------------

    def try_push(self, value: Any) -> WorkTransition[int]:
        clock = self.clock
        return self.core.push(value, None if clock is None else int(clock() * 1000))

    def try_claim(self, worker: str, now: float) -> WorkTransition[Delivery | None]:
        return self.core.claim(worker, now)

    def try_settle(
        self, worker: str, delivery_id: int, outcome: Settlement
    ) -> WorkTransition[Receipt | None]:
        core = self.core
        delivery = core.delivery(delivery_id) if isinstance(delivery_id, int) else None
        if outcome == "acked":
            ok, mask = core.ack(worker, delivery_id)
        else:  # the retry policy's back-off runs on the clock
            ok, mask = core.nack(worker, delivery_id,
                                 now=None if self.clock is None else self.clock())
        if not ok or delivery is None:
            return WorkTransition(None, mask)
        settled_at = self.clock() if self.clock is not None else 0.0
        receipt = Receipt(self.name, delivery.delivery_id, delivery.item_id, delivery.worker,
                          outcome, settled_at)
        return WorkTransition(receipt, mask)

    def try_extend(self, worker: str, delivery_id: int, now: float) -> WorkTransition[bool]:
        return self.core.extend_lease(worker, delivery_id, now)

    def try_reap_expired(self, now: float) -> WorkTransition[int]:
        return self.core.reap_expired(now)

    def try_redrive(self, item_ids: Collection[int] | None = None) -> WorkTransition[int]:
        return self.core.redrive(item_ids)

    # -- awaitable operations ------------------------------------------------------------

    async def push(self, value: Any, *, timeout: float | None = None) -> WorkTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_push(value)

    async def push_options(
        self, value: Any, options: WorkPushOptions, now: float | None, *,
        timeout: float | None = None,
    ) -> WorkTransition[int]:
        """A push with any combination of options (checked), applied once per
        ``msg_id`` in the window; ``now`` is the time a delay or TTL counts from."""
        if timeout is not None:
            check_timeout(timeout)
        msg_id = options.msg_id
        if msg_id is None:
            return self._push_with(value, options, now)
        at = _elapsed_ms()
        found, item_id = self.dedup.lookup(msg_id, at)
        if found:
            return WorkTransition(item_id, 0)
        transition = self._push_with(value, options, now)
        self.dedup.record(msg_id, transition.result, at)
        return transition

    def _push_with(self, value: Any, options: WorkPushOptions, now: float | None
                   ) -> WorkTransition[int]:
        clock = self.clock
        stamp = None if clock is None else int(clock() * 1000)
        at = _scheduling_time(now) if options.delayed else 0.0 if now is None else now
        due = options.due(at, 1)
        transition = self.core.push_scheduled(value, stamp, priority=options.level,
                                              due=due, now=at)
        if options.ttl_ms is not None:
            self._note_ttl(transition.result, options.ttl_ms, stamp, now)
        if options.headers is not None:
            self._note_headers(transition.result, options.headers)
        return transition

    def _note_ttl(self, item_id: int, ttl_ms: int, stamp: int | None,
                  now: float | None) -> None:
        raise InvalidSchedule(f"{self.name}: this work queue has no message expiry")

    def _note_headers(self, item_id: int, headers: Headers) -> None:
        table = self._headers
        if table is None:
            table = self._headers = OffsetHeaders(self.core)
        elif table.due():
            core = self.core
            table.keep_only({p.item_id for p in core.pending()}
                            | {d.item_id for d in core.in_flight()}
                            | {d.item_id for d in core.dead_letters()}
                            | {d.item_id for _, d in core.delayed()})
        table.note(item_id, headers)

    def headers_of(self, item_id: int) -> Headers | None:
        table = self._headers
        return None if table is None else table.get(item_id)

    async def push_once(
        self, value: Any, msg_id: str, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        now = _elapsed_ms()
        found, item_id = self.dedup.lookup(msg_id, now)
        if found:
            return WorkTransition(item_id, 0)
        transition = self.try_push(value)
        self.dedup.record(msg_id, transition.result, now)
        return transition

    async def poll(
        self, worker: str, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[Delivery | None]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_claim(worker, _time(now))

    async def poll_many(
        self, worker: str, n: int, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[list[Delivery]]:
        if timeout is not None:
            check_timeout(timeout)
        return self.core.claim_many(worker, _time(now), n)

    async def release(
        self, worker: str, delivery_ids: list[int], *, timeout: float | None = None
    ) -> WorkTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        return self.core.release(worker, delivery_ids)

    async def settle(
        self, worker: str, delivery_id: int, outcome: Settlement, *,
        timeout: float | None = None,
    ) -> WorkTransition[Receipt | None]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_settle(worker, delivery_id, outcome)

    async def extend(
        self, worker: str, delivery_id: int, now: float | None, *,
        timeout: float | None = None,
    ) -> WorkTransition[bool]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_extend(worker, delivery_id, _time(now))

    async def reap_expired(
        self, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_reap_expired(_time(now))

    async def nack_delayed(
        self, worker: str, delivery_id: int, delay: float, now: float | None, *,
        timeout: float | None = None,
    ) -> WorkTransition[Receipt | None]:
        if timeout is not None:
            check_timeout(timeout)
        core = self.core
        at = _scheduling_time(now)
        delivery = core.delivery(delivery_id) if isinstance(delivery_id, int) else None
        ok, mask = core.nack(worker, delivery_id, now=at, delay=delay)
        if not ok or delivery is None:
            return WorkTransition(None, mask)
        settled_at = self.clock() if self.clock is not None else 0.0
        return WorkTransition(Receipt(self.name, delivery.delivery_id, delivery.item_id,
                                      delivery.worker, "nacked", settled_at), mask)

    async def promote_due(
        self, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        return self.core.promote_due(_scheduling_time(now))

    async def redrive(
        self, item_ids: Collection[int] | None = None, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_redrive(item_ids)
