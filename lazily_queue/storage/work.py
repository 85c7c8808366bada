"""The storage seam of a WorkQueueCell: what every work-queue backend implements.

:class:`WorkQueueStorage` is required of every backend (local, Raft, a remote client, a
broker adapter): the awaitable operations, each returning a
:class:`~lazily_queue.core.work.WorkTransition` (result plus the reader mask to
invalidate), and the synchronous reads the readers derive from. ``poll`` claims
without waiting (the cell does the waiting); ``settle`` acks or nacks and returns the
:class:`~lazily_queue.core.work.Receipt` of the settlement, or ``None`` when it was
refused.

Declared capabilities (:class:`StorageCapabilities`): ``sync`` for
:class:`SyncWorkQueueStorage` (``try_*``), ``observable`` for
:class:`ObservableWorkQueueStorage` (every transition's mask reported to the listener,
including ones the cell did not make), and ``own_clock`` when a ``now`` of ``None``
is stamped by the backend (a Raft leader). A backend whose concurrent calls keep their
order (a Raft one: each proposes as it starts) may add ``push_many(values)``, the
transitions of pushes made together, which ``WorkQueueCell.push_many`` then uses. The
local backend is :class:`~lazily_queue.storage.local_work.LocalWorkQueueStorage`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Literal, Protocol, cast

from ..core.headers import Headers
from ..core.work import DeadLetter, Delivery, PendingItem, Receipt, WorkTransition
from ..core.work_options import WorkPushOptions
from .capabilities import StorageCapabilities, declared

WorkQueueChangeListener = Callable[[int], None]
"""``listener(mask)``, called once per applied transition with a non-zero mask."""

Settlement = Literal["acked", "nacked"]
"""How a delivery is settled: done (``acked``) or given back (``nacked``)."""


class WorkQueueStorage(Protocol):
    """A work queue with leases, retries and dead letters."""

    __slots__ = ()  # an implementation that names the protocol keeps its own slots

    @property
    def capabilities(self) -> StorageCapabilities: ...

    @property
    def visibility_timeout(self) -> float: ...

    @property
    def lease_seconds(self) -> float:
        """``visibility_timeout`` in seconds of wall time (a consumer judges on its own
        clock whether a prefetched lease is about to run out)."""
        ...

    @property
    def max_deliveries(self) -> int: ...

    def pending_len(self) -> int: ...

    def is_empty(self) -> bool: ...

    def in_flight_len(self) -> int: ...

    def dead_letter_len(self) -> int: ...

    def pending(self) -> list[PendingItem]: ...

    def in_flight(self) -> list[Delivery]: ...

    def dead_letters(self) -> list[DeadLetter]: ...

    def in_flight_by_worker(self) -> dict[str, list[Delivery]]: ...

    def snapshot(self) -> dict[str, Any]: ...

    async def push(self, value: Any, *, timeout: float | None = None) -> WorkTransition[int]:
        ...

    def check_worker_name(self, worker: str) -> None:
        """Raise :class:`~lazily_queue.errors.InvalidName` for a worker name this
        backend's claims refuse (a claim checks it before anything is sent). The
        default (a storage that subclasses this protocol inherits it) takes every
        ``str``, as an in-process queue does."""
        return None

    def check_claim_time(self, now: float) -> None:
        """Raise ``ValueError`` for a claim's ``now`` this backend refuses (a claim checks
        it before it waits for an item). The default takes every time, as an in-process
        queue does (its claim checks the time itself)."""
        return None

    async def poll(
        self, worker: str, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[Delivery | None]:
        """Claim the oldest pending item without waiting, or ``None``."""
        ...

    async def poll_many(
        self, worker: str, n: int, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[list[Delivery]]:
        """Lease up to ``n`` of the oldest pending items to ``worker`` at once, without
        waiting (an empty list when nothing is pending)."""
        ...

    async def settle(
        self, worker: str, delivery_id: int, outcome: Settlement, *,
        timeout: float | None = None,
    ) -> WorkTransition[Receipt | None]: ...

    async def release(
        self, worker: str, delivery_ids: list[int], *, timeout: float | None = None
    ) -> WorkTransition[int]:
        """Give unstarted leases back to the pending head, attempts not counted."""
        ...

    async def extend(
        self, worker: str, delivery_id: int, now: float | None, *,
        timeout: float | None = None,
    ) -> WorkTransition[bool]: ...

    async def reap_expired(
        self, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[int]: ...

    async def redrive(
        self, item_ids: Collection[int] | None = None, *, timeout: float | None = None
    ) -> WorkTransition[int]: ...


class SyncWorkQueueStorage(WorkQueueStorage, Protocol):
    """Capability ``sync``: the operations complete synchronously."""

    def try_push(self, value: Any) -> WorkTransition[int]: ...

    def try_claim(self, worker: str, now: float) -> WorkTransition[Delivery | None]: ...

    def try_settle(
        self, worker: str, delivery_id: int, outcome: Settlement
    ) -> WorkTransition[Receipt | None]: ...

    def try_extend(self, worker: str, delivery_id: int, now: float) -> WorkTransition[bool]: ...

    def try_reap_expired(self, now: float) -> WorkTransition[int]: ...

    def try_redrive(self, item_ids: Collection[int] | None = None) -> WorkTransition[int]: ...


class DedupWorkQueueStorage(WorkQueueStorage, Protocol):
    """Capability ``dedup``."""

    async def push_once(
        self, value: Any, msg_id: str, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        """:meth:`push`, unless ``msg_id`` is in the dedup window: then the first push's
        ``item_id``, and nothing changes."""
        ...


class HeaderWorkQueueStorage(WorkQueueStorage, Protocol):
    """Capability ``headers``: items pushed with headers (``push_options``), kept by
    item id."""

    def headers_of(self, item_id: int) -> Headers | None:
        """The headers of item ``item_id`` while it exists (``None``: none)."""
        ...


class SchedulingWorkQueueStorage(WorkQueueStorage, Protocol):
    """Capability ``scheduling``: priorities, delayed items and delayed nacks. Delays are
    seconds and ``not_before`` seconds since the Unix epoch (already checked); the
    backend converts them to its own time unit."""

    def delayed_len(self) -> int: ...

    def next_due(self) -> float | None:
        """The earliest due time of a delayed item, in the backend's time unit."""
        ...

    def delayed(self) -> list[tuple[float, PendingItem]]: ...

    def pending_by_priority(self) -> dict[int, int]: ...

    async def nack_delayed(
        self, worker: str, delivery_id: int, delay: float, now: float | None, *,
        timeout: float | None = None,
    ) -> WorkTransition[Receipt | None]:
        """Nack, the item claimable again from ``now + delay`` (0: at once)."""
        ...

    async def promote_due(
        self, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        """Make the delayed items due at ``now`` claimable (a backend with its own clock
        promotes at its own stamp and may refuse a ``now`` that is not ``None``)."""
        ...


class OptionsWorkQueueStorage(WorkQueueStorage, Protocol):
    """The push with options of a backend declaring ``headers``, ``scheduling`` or
    ``expiry``: any combination of the options it declares, in one step."""

    async def push_options(
        self, value: Any, options: WorkPushOptions, now: float | None, *,
        timeout: float | None = None,
    ) -> WorkTransition[int]:
        """Push ``value`` with ``options`` (checked; only options whose capabilities the
        backend declares); ``now`` is the time a delay or TTL counts from (``None``:
        the backend's stamp)."""
        ...


class ObservableWorkQueueStorage(WorkQueueStorage, Protocol):
    """Capability ``observable``."""

    def set_change_listener(self, listener: WorkQueueChangeListener | None) -> None:
        """Report every transition's mask, including ones the cell did not make."""
        ...


REQUIRED = ("poll_many", "pending_len", "is_empty", "in_flight_len", "dead_letter_len", "pending",
            "in_flight", "dead_letters", "in_flight_by_worker", "snapshot", "push", "poll",
            "settle", "release", "extend", "reap_expired", "redrive", "check_worker_name",
            "check_claim_time")
CAPABILITY_METHODS = {
    "sync": ("try_push", "try_claim", "try_settle", "try_extend", "try_reap_expired",
             "try_redrive"),
    "observable": ("set_change_listener",),
    "lifecycle": ("raise_if_stopped", "set_change_listener"),
    "dedup": ("push_once",),
    "headers": ("push_options", "headers_of"),
    "scheduling": ("delayed_len", "next_due", "delayed", "pending_by_priority",
                   "push_options", "nack_delayed", "promote_due"),
    "expiry": ("push_options", "expired_count"),
}


def work_queue_capabilities(storage: WorkQueueStorage) -> StorageCapabilities:
    """The storage's declared capabilities, checked against its methods (``TypeError``)."""
    return declared(storage, "work queue", REQUIRED, CAPABILITY_METHODS)


def as_sync_work_queue(storage: WorkQueueStorage) -> SyncWorkQueueStorage | None:
    return cast(SyncWorkQueueStorage, storage) if storage.capabilities.sync else None


def as_dedup_work_queue(storage: WorkQueueStorage) -> DedupWorkQueueStorage | None:
    return cast(DedupWorkQueueStorage, storage) if storage.capabilities.dedup else None


def as_headers_work_queue(storage: WorkQueueStorage) -> HeaderWorkQueueStorage | None:
    caps = storage.capabilities
    return cast(HeaderWorkQueueStorage, storage) if caps.headers else None


def as_scheduling_work_queue(storage: WorkQueueStorage) -> SchedulingWorkQueueStorage | None:
    caps = storage.capabilities
    return cast(SchedulingWorkQueueStorage, storage) if caps.scheduling else None


def as_observable_work_queue(storage: WorkQueueStorage) -> ObservableWorkQueueStorage | None:
    caps = storage.capabilities
    return cast(ObservableWorkQueueStorage, storage) if caps.observable else None
