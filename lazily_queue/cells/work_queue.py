"""WorkQueueCell: the reactive competing-consumer shell over any work-queue storage.

Readers (``pending_len``, ``is_empty``, ``in_flight_len``, ``dead_letter_len``) are
memoized slots with no graph dependencies; each successful operation clears exactly the
kinds whose count moved, in one batch. ``is_empty`` reflects pending items only.

Time is always supplied by the caller. The synchronous operations take an explicit
``now``; the awaitable ones accept a number or a clock callable, or fall back to the
``clock`` given at construction (or, on a backend that declares ``own_clock``, to the
backend's time). The cell never reads a clock of its own and no lease expires until
:meth:`WorkQueueCell.reap_expired` is called.

A refused settlement (ack, nack or lease extension of a delivery no longer leased to
that worker) raises :class:`~lazily_queue.errors.SettlementRejected` on every path.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping
from typing import Any, TypeVar

from ..core.limited_work import LimitedWorkQueue
from ..core.limits import Limits
from ..core.scheduling import RetryPolicy
from ..core.work import DeadLetter, Delivery, PendingItem, Receipt, WorkQueueCore, WorkTransition
from ..core.work_items import check_worker
from ..errors import InvalidConfiguration, UnsupportedOperation, shown
from ..reactive import Context, Slot, SlotGroup
from ..serializers import Codec, Serializer
from ..storage.capabilities import StorageCapabilities, stop_check, unreachable_check
from ..storage.local_work import LocalWorkQueueStorage
from ..storage.local_work_expiry import ExpiringWorkQueueStorage
from ..storage.serializing_work import SerializingWorkQueueStorage
from ..storage.work import (
    Settlement,
    SyncWorkQueueStorage,
    WorkQueueStorage,
    as_observable_work_queue,
    as_sync_work_queue,
    work_queue_capabilities,
)
from ..threads import LoopBridge, ThreadSafeCell
from .deadline import Deadline
from .expiry import expired_reader
from .job import Job, deliver
from .prefetch import prefetch_size
from .work_batches import Clock, Now, WorkQueueBatches
from .work_limits import WorkLimits, WorkQuota
from .work_pushes import WorkQueuePushes
from .work_scheduling import rejected
from .work_settling import WorkQueueSettlements

R = TypeVar("R")


#: The lease length of a work queue unless given, in its time unit (seconds with a
#: seconds clock such as ``time.monotonic``; ``Node.work_queue`` takes seconds too).
DEFAULT_VISIBILITY_TIMEOUT = 30.0
#: How many deliveries an item gets before it is dead-lettered, unless given.
DEFAULT_MAX_DELIVERIES = 3


class WorkQueueCell(WorkQueueSettlements, WorkQueueBatches, WorkLimits, WorkQueuePushes):
    """A work queue with leases, retries and dead letters, bound to one reactive context.

    On every backend: ``await push``, ``await claim`` (waits for work), its non-waiting
    twin ``await poll``, ``await ack / nack / extend / reap_expired / redrive``,
    :meth:`deliveries`, the views and the readers. On a backend that declares ``sync``
    (the local core), the synchronous ``try_push``, ``try_claim``, ``try_ack``,
    ``try_nack``, ``try_extend``, ``try_reap_expired`` and ``try_redrive`` too;
    elsewhere they raise :class:`~lazily_queue.errors.UnsupportedOperation` naming the
    awaitable to use. Without a storage the cell runs a local :class:`WorkQueueCore`
    (``visibility_timeout`` 30 and ``max_deliveries`` 3 unless given, as
    ``Node.work_queue``). ``serializer`` (see :mod:`lazily_queue.serializers`) encodes
    what is pushed and decodes the values of deliveries and views.
    """

    def __init__(
        self,
        storage: WorkQueueStorage | None = None,
        *,
        visibility_timeout: float | None = None,
        max_deliveries: int | None = None,
        clock: Clock | None = None,
        context: Context | None = None,
        name: str = "work_queue",
        serializer: Serializer[Any] | None = None,
        retry: RetryPolicy | None = None,
        ttl: float | None = None,
        limits: Limits | None = None,
    ) -> None:
        if clock is not None and not callable(clock):
            raise TypeError(f"clock must be a callable returning the time, got {shown(clock)}")
        Limits.checked(limits, name)
        if storage is None:
            lease = DEFAULT_VISIBILITY_TIMEOUT if visibility_timeout is None else visibility_timeout
            retries = DEFAULT_MAX_DELIVERIES if max_deliveries is None else max_deliveries
            if retry is not None and clock is None:
                raise InvalidConfiguration(f"{name}: a retry policy counts its back-off on "
                                           "the cell's clock: pass clock= too")
            core = (WorkQueueCore(lease, retries, retry=retry) if limits is None
                    else LimitedWorkQueue(lease, retries, limits=limits, retry=retry))
            storage = (LocalWorkQueueStorage(core, name=name, clock=clock) if ttl is None
                       else ExpiringWorkQueueStorage(core, name=name, clock=clock, ttl=ttl))
        elif (visibility_timeout is not None or max_deliveries is not None or retry is not None
              or limits is not None or ttl is not None):
            raise ValueError("pass visibility_timeout/max_deliveries/retry/limits/ttl to the "
                             "storage backend")
        if serializer is not None:
            storage = SerializingWorkQueueStorage(storage, Codec(serializer, name))
        self.serializer = serializer
        self._caps = work_queue_capabilities(storage)
        self.name = name
        self._take_context(context)
        self.clock = clock
        self._storage = storage
        self._raise_if_stopped = stop_check(storage)
        self._unreachable = unreachable_check(storage)
        group = SlotGroup(self.ctx)
        self._group = group
        # Creation order fixes the bits: PENDING_LEN, IS_EMPTY, IN_FLIGHT_LEN, DEAD_LETTER_LEN.
        self.pending_len: Slot[int] = group.slot(storage.pending_len, f"{name}.pending_len")
        self.is_empty: Slot[bool] = group.slot(storage.is_empty, f"{name}.is_empty")
        self.in_flight_len: Slot[int] = group.slot(storage.in_flight_len, f"{name}.in_flight_len")
        self.dead_letter_len: Slot[int] = group.slot(
            storage.dead_letter_len, f"{name}.dead_letter_len"
        )
        #: Items committed but not claimable before their due time (0 without the
        #: ``scheduling`` capability).
        self.delayed_len: Slot[int] = group.slot(self._delayed_len, f"{name}.delayed_len")
        #: Items that expired before their first delivery (capability ``expiry``).
        self.expired: Slot[int] = group.slot(expired_reader(storage), f"{name}.expired")
        #: The ``bytes`` and ``dropped`` readers of a work queue with limits (``None``
        #: without limits).
        self.quota = WorkQuota.of(name, self, group)
        self._sync: SyncWorkQueueStorage | None = as_sync_work_queue(storage)
        observable = as_observable_work_queue(storage)
        self._observed = observable is not None
        if observable is not None:
            observable.set_change_listener(self._invalidate)

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
        storage = LocalWorkQueueStorage(WorkQueueCore.from_snapshot(snapshot), name=name,
                                        clock=clock)
        return cls(storage, clock=clock, context=context, name=name)

    def __repr__(self) -> str:
        return f"WorkQueueCell({self.name!r}, storage={self._storage!r})"

    @property
    def storage(self) -> WorkQueueStorage:
        return self._storage

    @property
    def capabilities(self) -> StorageCapabilities:
        """What the backend declares beyond the awaitable operations (``sync``, ...)."""
        return self._caps

    @property
    def visibility_timeout(self) -> float:
        """The lease length, in the units of the cell's clock."""
        return self._storage.visibility_timeout

    @property
    def lease_seconds(self) -> float:
        """The lease length in seconds of wall time, whatever the cell's clock counts."""
        return self._storage.lease_seconds

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

    def _require_sync(self, method: str, awaitable: str) -> SyncWorkQueueStorage:
        """The synchronous backend for ``method``, in this thread (:mod:`.loop_owner`)."""
        if self._sync is None:
            raise UnsupportedOperation(
                f"{self.name}: {method} needs a synchronous backend and "
                f"{type(self._storage).__name__} is not one; use "
                f"`await {self.name}.{awaitable}` instead"
            )
        if self._checks_thread:
            self._at_home(method)
        return self._sync

    def _now(self, now: Now) -> float | None:
        """The time of an awaitable operation; ``None`` lets the backend stamp its own."""
        if now is None:
            if self.clock is not None:
                return self.clock()
            if self._caps.own_clock:
                return None
            raise ValueError(
                f"{self.name}: pass now= (a time or a clock callable) or construct the "
                "cell with clock=; it never reads a clock of its own"
            )
        return now() if callable(now) else now

    def _settled(
        self, transition: WorkTransition[Receipt | None], worker: str, delivery_id: int,
        outcome: Settlement,
    ) -> Receipt:
        receipt = self._apply(transition)
        if receipt is None:
            verb = "ack" if outcome == "acked" else "nack"
            raise rejected(self.name, verb, worker, delivery_id)
        return receipt

    # -- views ------------------------------------------------------------------------------

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

    # -- claiming (every backend; settling is in .work_settling) ---------------------------

    async def poll(self, worker: str, now: Now = None) -> Delivery | None:
        """Claim without waiting: the lease of the oldest pending item, or ``None``.

        ``now`` is a time, a clock callable or ``None`` (the cell's ``clock``).
        """
        self._own()
        at = self._now(now)
        if self._sync is not None and at is not None:
            return self.try_claim(worker, at)
        return self._apply(await self._storage.poll(worker, at))

    async def claim(
        self, worker: str, *, now: Now = None, timeout: float | None = None
    ) -> Delivery:
        """Wait until an item is pending, then lease it to ``worker``.

        ``now`` is a time, a clock callable (called at each claim attempt) or ``None``
        for the cell's ``clock``. Raises ``TimeoutError`` after waiting ``timeout``
        seconds (:mod:`.deadline`: ``timeout=0`` claims a pending item, never waits).
        Locally, cancellation is safe: a lease is made only in the step that returns it.
        Over a replicated backend a claim cancelled while committing may leave a lease
        no caller holds; it comes back through :meth:`reap_expired` (at least once). A
        lease that ended before the claim returned (reaped or settled behind it, or the
        claim answered late after a failover) is not returned: it claims again.
        """
        self._own()
        self._check_worker(worker, now)  # refused at once, not once an item is pending
        deadline = Deadline(timeout)
        while True:
            if not self._storage.is_empty():  # no round trip while nothing is pending
                delivery = await self.poll(worker, now)
                if delivery is not None:
                    return delivery
            async with deadline.waiting(f"claim from work queue {self.name!r}: no pending item",
                                        self._unreachable):
                await self._wait_for_work(now)

    def _check_worker(self, worker: str, now: Now) -> None:
        """Raise what the backend's claim raises for a worker name, or a time, it
        refuses."""
        self._storage.check_worker_name(check_worker(worker))
        if now is not None and not callable(now):
            self._storage.check_claim_time(now)

    def _has_pending(self) -> bool:
        self._raise_if_stopped()
        return not self.is_empty()

    # -- workers ----------------------------------------------------------------------------

    def deliveries(
        self, worker: str, *, prefetch: int | None = None, now: Now = None
    ) -> AsyncGenerator[Job, None]:
        """Claim work for ``worker`` forever, yielding each lease as a :class:`Job`.

        Use each job as an async context manager: it is acked when the block ends
        normally and nacked when it raises or is cancelled. A job the worker never
        settles stays leased and is redelivered after its lease expires.

        Over a replicated backend one claim leases up to ``prefetch`` items (default
        :data:`~lazily_queue.cells.job.DEFAULT_PREFETCH`; the first claim at most
        :data:`~lazily_queue.cells.job.FIRST_PREFETCH`, the next twice as many while the
        worker handed the last batch out faster than its claim took to commit, half as
        many when it was slower) and the acks of the blocks that
        ended in one event-loop iteration are proposed together at its end (one
        operation) and commit while the next jobs run (``job.receipt`` is set when they
        have). The acks not yet proposed go with the next claim; before that claim's jobs
        are handed out every earlier ack has committed, and a refused one raises
        :class:`SettlementRejected` from the iterator. When the iteration ends, the
        prefetched items not handed out are released (back to the head, the lease not
        counted as an attempt); if the process dies first, they are redelivered when
        their leases expire. The acks still committing are awaited then; those that did
        not commit (a quorum loss) raise :class:`~lazily_queue.errors.UnconfirmedAcks`
        from the iterator or its ``aclose()`` (end it with ``contextlib.aclosing`` to
        receive it), and their items are redelivered when their leases expire.
        ``prefetch=1`` claims one item at a time and commits each ack before the
        block's exit returns.
        """
        self._own()
        prefetch_size(prefetch, 1)  # refused here, also where it is not used
        self._check_worker(worker, now)
        size = 1 if self._sync is not None else prefetch
        return deliver(self, worker, size, now)
