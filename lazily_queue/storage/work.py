"""The storage seam of a WorkQueueCell: the work-queue core's operations and reads.

The local backend is :class:`~lazily_queue.core.work.WorkQueueCore` itself. Every
operation returns a :class:`~lazily_queue.core.work.WorkTransition` (result plus the
reader mask to invalidate). A backend whose state also changes outside the shell's own
calls implements :class:`ObservableWorkQueueStorage`: it reports the mask of every
transition to the listener, and the shell then invalidates from those reports only. A
backend whose operations need a round trip implements
:class:`ReplicatedWorkQueueStorage`; the shell's awaitable methods go through it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Protocol, runtime_checkable

from ..core.work import DeadLetter, Delivery, PendingItem, WorkTransition

WorkQueueChangeListener = Callable[[int], None]
"""``listener(mask)``, called once per applied transition with a non-zero mask."""


@runtime_checkable
class WorkQueueView(Protocol):
    """The read surface every work-queue backend offers (possibly a replica's view)."""

    visibility_timeout: float
    max_deliveries: int

    def pending_len(self) -> int: ...

    def is_empty(self) -> bool: ...

    def in_flight_len(self) -> int: ...

    def dead_letter_len(self) -> int: ...

    def pending(self) -> list[PendingItem]: ...

    def in_flight(self) -> list[Delivery]: ...

    def dead_letters(self) -> list[DeadLetter]: ...

    def in_flight_by_worker(self) -> dict[str, list[Delivery]]: ...

    def snapshot(self) -> dict[str, Any]: ...


@runtime_checkable
class WorkQueueStorage(WorkQueueView, Protocol):
    """A backend whose operations complete synchronously."""

    def push(self, value: Any) -> WorkTransition[int]: ...

    def claim(self, worker: str, now: float) -> WorkTransition[Delivery | None]: ...

    def ack(self, worker: str, delivery_id: int) -> WorkTransition[bool]: ...

    def nack(self, worker: str, delivery_id: int) -> WorkTransition[bool]: ...

    def reap_expired(self, now: float) -> WorkTransition[int]: ...

    def extend_lease(self, worker: str, delivery_id: int, now: float) -> WorkTransition[bool]: ...

    def redrive(self, item_ids: Collection[int] | None = None) -> WorkTransition[int]: ...


@runtime_checkable
class ObservableWorkQueueStorage(Protocol):
    def set_change_listener(self, listener: WorkQueueChangeListener | None) -> None:
        """Report every transition's mask, including ones the shell did not make."""
        ...


@runtime_checkable
class ReplicatedWorkQueueStorage(WorkQueueView, Protocol):
    """Operations that return once committed, with the same transitions as the sync ones."""

    async def push_async(
        self, value: Any, *, timeout: float | None = None
    ) -> WorkTransition[int]: ...

    async def claim_async(
        self, worker: str, now: float, *, timeout: float | None = None
    ) -> WorkTransition[Delivery | None]: ...

    async def ack_async(
        self, worker: str, delivery_id: int, *, timeout: float | None = None
    ) -> WorkTransition[bool]: ...

    async def nack_async(
        self, worker: str, delivery_id: int, *, timeout: float | None = None
    ) -> WorkTransition[bool]: ...

    async def reap_expired_async(
        self, now: float, *, timeout: float | None = None
    ) -> WorkTransition[int]: ...

    async def extend_lease_async(
        self, worker: str, delivery_id: int, now: float, *, timeout: float | None = None
    ) -> WorkTransition[bool]: ...

    async def redrive_async(
        self, item_ids: Collection[int] | None = None, *, timeout: float | None = None
    ) -> WorkTransition[int]: ...
