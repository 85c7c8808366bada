"""WorkQueueCell: the reactive competing-consumer shell over any work-queue storage.

Readers (``pending_len``, ``is_empty``, ``in_flight_len``, ``dead_letter_len``) are
memoized slots with no graph dependencies; each successful operation clears exactly the
kinds whose count moved, in one batch. ``is_empty`` reflects pending items only.

Time is always supplied by the caller. The synchronous operations take an explicit
``now``; the awaitable ones accept a number or a clock callable, or fall back to the
``clock`` given at construction. The cell never reads a clock of its own and no lease
expires until :meth:`WorkQueueCell.reap_expired` is called.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from typing import Any, TypeVar

from ..core.work import (
    DeadLetter,
    Delivery,
    PendingItem,
    WorkQueueCore,
    WorkTransition,
)
from ..errors import UnsupportedOperation
from ..reactive import Context, Slot, SlotGroup, resolve_context, wait_until
from ..storage.work import (
    ObservableWorkQueueStorage,
    ReplicatedWorkQueueStorage,
    WorkQueueStorage,
    WorkQueueView,
)
from ..threads import LoopBridge, ThreadSafeCell
from .job import Job

R = TypeVar("R")

Clock = Callable[[], float]
Now = float | Clock | None


class WorkQueueCell:
    """A work queue with leases, retries and dead letters, bound to one reactive context.

    Core (synchronous) surface: :meth:`push`, :meth:`try_claim`, :meth:`ack`,
    :meth:`nack`, :meth:`reap_expired` and the readers. :meth:`claim` waits for work;
    the ``a``-prefixed twins also work over replicated storage. Without a storage the
    cell runs a local :class:`WorkQueueCore` (``visibility_timeout`` required,
    ``max_deliveries`` 3 unless given).
    """

    def __init__(
        self,
        storage: WorkQueueStorage | ReplicatedWorkQueueStorage | None = None,
        *,
        visibility_timeout: float | None = None,
        max_deliveries: int | None = None,
        clock: Clock | None = None,
        context: Context | None = None,
        name: str = "work_queue",
    ) -> None:
        if storage is None:
            if visibility_timeout is None:
                raise TypeError("WorkQueueCell needs visibility_timeout (or a storage backend)")
            storage = WorkQueueCore(
                visibility_timeout, 3 if max_deliveries is None else max_deliveries
            )
        elif visibility_timeout is not None or max_deliveries is not None:
            raise ValueError("pass visibility_timeout/max_deliveries to the storage backend")
        if not isinstance(storage, WorkQueueView):
            raise TypeError(f"{type(storage).__name__} is not a work queue storage")
        if clock is not None and not callable(clock):
            raise TypeError(f"clock must be a callable returning the time, got {clock!r}")
        self.name = name
        self.ctx = resolve_context(context)
        self.clock = clock
        self._storage = storage
        group = SlotGroup(self.ctx)
        self._group = group
        # Creation order fixes the bits: PENDING_LEN, IS_EMPTY, IN_FLIGHT_LEN, DEAD_LETTER_LEN.
        self.pending_len: Slot[int] = group.slot(storage.pending_len, f"{name}.pending_len")
        self.is_empty: Slot[bool] = group.slot(storage.is_empty, f"{name}.is_empty")
        self.in_flight_len: Slot[int] = group.slot(storage.in_flight_len, f"{name}.in_flight_len")
        self.dead_letter_len: Slot[int] = group.slot(
            storage.dead_letter_len, f"{name}.dead_letter_len"
        )
        self._replicated = isinstance(storage, ReplicatedWorkQueueStorage)
        self._observed = isinstance(storage, ObservableWorkQueueStorage)
        if isinstance(storage, ObservableWorkQueueStorage):
            storage.set_change_listener(self._invalidate)

    @classmethod
    def from_snapshot(
        cls,
        snapshot: Mapping[str, Any],
        *,
        clock: Clock | None = None,
        context: Context | None = None,
        name: str = "work_queue",
    ) -> WorkQueueCell:
        """A local work queue restored from :meth:`snapshot` output (validated)."""
        return cls(WorkQueueCore.from_snapshot(snapshot), clock=clock, context=context, name=name)

    def __repr__(self) -> str:
        return f"WorkQueueCell({self.name!r}, storage={self._storage!r})"

    @property
    def storage(self) -> WorkQueueStorage | ReplicatedWorkQueueStorage:
        return self._storage

    @property
    def visibility_timeout(self) -> float:
        return self._storage.visibility_timeout

    @property
    def max_deliveries(self) -> int:
        return self._storage.max_deliveries

    # -- invalidation ---------------------------------------------------------------------

    def _invalidate(self, mask: int) -> None:
        if mask:
            self._group.invalidate(mask)

    def _apply(self, transition: WorkTransition[R]) -> R:
        if not self._observed and transition.mask:
            self._group.invalidate(transition.mask)
        return transition.result

    def _sync(self, twin: str) -> WorkQueueStorage:
        if self._replicated:
            raise UnsupportedOperation(
                f"{self.name}: {type(self._storage).__name__} is replicated; "
                f"use 'await {twin}(...)' instead"
            )
        return self._storage  # type: ignore[return-value]

    def _remote(self) -> ReplicatedWorkQueueStorage | None:
        return self._storage if self._replicated else None  # type: ignore[return-value]

    def _now(self, now: Now) -> float:
        if now is None:
            if self._replicated and self.clock is None:
                # Replicated storage: the leader stamps its own time.
                return None  # type: ignore[return-value]
            if self.clock is None:
                raise ValueError(
                    f"{self.name}: pass now= (a time or a clock callable) or construct the "
                    "cell with clock=; it never reads a clock of its own"
                )
            return self.clock()
        return now() if callable(now) else now

    # -- core surface ---------------------------------------------------------------------

    def push(self, value: Any) -> int:
        """Append ``value`` to the pending tail; returns its ``item_id``."""
        return self._apply(self._sync("apush").push(value))

    def try_claim(self, worker: str, now: float) -> Delivery | None:
        """Lease the oldest pending item until ``now + visibility_timeout``, or ``None``."""
        return self._apply(self._sync("atry_claim").claim(worker, now))

    def ack(self, worker: str, delivery_id: int) -> bool:
        """Settle a live delivery owned by ``worker``; ``False`` otherwise (no change)."""
        return self._apply(self._sync("aack").ack(worker, delivery_id))

    def nack(self, worker: str, delivery_id: int) -> bool:
        """Fail an owned delivery: requeue at the tail, or dead-letter at the retry limit."""
        return self._apply(self._sync("anack").nack(worker, delivery_id))

    def reap_expired(self, now: float) -> int:
        """Fail every lease with ``deadline < now``; returns how many expired."""
        return self._apply(self._sync("areap_expired").reap_expired(now))

    def extend_lease(self, worker: str, delivery_id: int, now: float) -> bool:
        """Move an owned lease's deadline to ``now + visibility_timeout``."""
        return self._apply(self._sync("aextend_lease").extend_lease(worker, delivery_id, now))

    def redrive(self, item_ids: Collection[int] | None = None) -> int:
        """Move dead letters back to the pending tail with ``attempts`` reset to 0."""
        return self._apply(self._sync("aredrive").redrive(item_ids))

    def pending(self) -> list[PendingItem]:
        return self._storage.pending()

    def in_flight(self) -> list[Delivery]:
        """Live deliveries in ascending ``delivery_id``."""
        return self._storage.in_flight()

    def dead_letters(self) -> list[DeadLetter]:
        return self._storage.dead_letters()

    def in_flight_by_worker(self) -> dict[str, list[Delivery]]:
        return self._storage.in_flight_by_worker()

    def snapshot(self) -> dict[str, Any]:
        """The whole state (configuration and id counters included) as plain data."""
        return self._storage.snapshot()

    def readers(self) -> dict[str, Slot[Any]]:
        """Every reader kind by its spec name."""
        return {
            "pending_len": self.pending_len,
            "is_empty": self.is_empty,
            "in_flight_len": self.in_flight_len,
            "dead_letter_len": self.dead_letter_len,
        }

    def threadsafe(self, loop: asyncio.AbstractEventLoop | None = None) -> ThreadSafeCell:
        """A blocking proxy for other threads (see :mod:`lazily_queue.threads`)."""
        return ThreadSafeCell(self, LoopBridge(loop))

    # -- awaitable surface ----------------------------------------------------------------

    async def apush(self, value: Any) -> int:
        """:meth:`push`, also on replicated storage (returns once committed)."""
        remote = self._remote()
        if remote is None:
            return self.push(value)
        return self._apply(await remote.push_async(value))

    async def atry_claim(self, worker: str, now: Now = None) -> Delivery | None:
        """:meth:`try_claim` without waiting; ``now`` may be a clock callable."""
        remote = self._remote()
        if remote is None:
            return self.try_claim(worker, self._now(now))
        return self._apply(await remote.claim_async(worker, self._now(now)))

    async def claim(
        self, worker: str, *, now: Now = None, timeout: float | None = None
    ) -> Delivery:
        """Wait until an item is pending, then lease it to ``worker``.

        ``now`` is a time, a clock callable (called at each claim attempt) or ``None``
        for the cell's ``clock``. Raises ``TimeoutError`` after ``timeout`` seconds.
        Locally, cancellation is safe: a lease is made only in the step that returns it.
        Over replicated storage a claim cancelled while committing may leave a lease no
        caller holds; it comes back through :meth:`reap_expired` (at least once).
        """
        async with asyncio.timeout(timeout):
            while True:
                if not self._storage.is_empty():  # no round trip while nothing is pending
                    delivery = await self.atry_claim(worker, now)
                    if delivery is not None:
                        return delivery
                await wait_until(self._has_pending, context=self.ctx)

    def _has_pending(self) -> bool:
        return not self.is_empty()

    async def aack(self, worker: str, delivery_id: int) -> bool:
        remote = self._remote()
        if remote is None:
            return self.ack(worker, delivery_id)
        return self._apply(await remote.ack_async(worker, delivery_id))

    async def anack(self, worker: str, delivery_id: int) -> bool:
        remote = self._remote()
        if remote is None:
            return self.nack(worker, delivery_id)
        return self._apply(await remote.nack_async(worker, delivery_id))

    async def areap_expired(self, now: Now = None) -> int:
        remote = self._remote()
        if remote is None:
            return self.reap_expired(self._now(now))
        return self._apply(await remote.reap_expired_async(self._now(now)))

    async def aextend_lease(self, worker: str, delivery_id: int, now: Now = None) -> bool:
        remote = self._remote()
        if remote is None:
            return self.extend_lease(worker, delivery_id, self._now(now))
        return self._apply(await remote.extend_lease_async(worker, delivery_id, self._now(now)))

    async def aredrive(self, item_ids: Collection[int] | None = None) -> int:
        remote = self._remote()
        if remote is None:
            return self.redrive(item_ids)
        return self._apply(await remote.redrive_async(item_ids))

    # -- workers ----------------------------------------------------------------------------

    async def deliveries(self, worker: str, *, now: Now = None) -> AsyncIterator[Job]:
        """Claim work for ``worker`` forever, yielding each lease as a :class:`Job`.

        Use each job as an async context manager: it is acked when the block ends
        normally and nacked when it raises or is cancelled. A job the worker never
        settles stays leased and is redelivered after its lease expires.
        """
        while True:
            delivery = await self.claim(worker, now=now)
            yield Job(self, delivery)
