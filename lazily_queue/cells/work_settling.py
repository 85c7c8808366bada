"""The settling half of :class:`~.work_queue.WorkQueueCell`, awaitable on every backend:
ack and nack a delivery, extend its lease, reap expired leases, redrive dead letters.

A refused settlement (a delivery no longer leased to that worker) raises
:class:`~lazily_queue.errors.SettlementRejected`; on a backend that declares ``sync``
each goes to its ``try_*`` twin (:mod:`.work_sync`)."""

from __future__ import annotations

from collections.abc import Collection

from ..core.work import Receipt
from ..core.work_items import check_delivery_id
from ..storage.work import SyncWorkQueueStorage
from .push_checks import ids_of
from .work_batches import Now
from .work_scheduling import WorkQueueScheduling, rejected
from .work_sync import WorkQueueSyncOps


class WorkQueueSettlements(WorkQueueSyncOps, WorkQueueScheduling):
    """Settles through the ``try_*`` half on a ``sync`` backend, through the storage
    elsewhere; a delayed nack through the scheduling half (the cell sets up what is
    declared)."""

    _sync: SyncWorkQueueStorage | None

    async def ack(self, worker: str, delivery_id: int) -> Receipt:
        """Settle a live delivery owned by ``worker`` as done: the settlement's receipt.

        Raises :class:`SettlementRejected` when the delivery is not leased to ``worker``
        (expired and redelivered, settled, or another worker's). A backend that
        remembers settlements (Raft) returns the first receipt, marked ``duplicate``,
        when the same worker repeats one.
        """
        self._own()
        check_delivery_id(delivery_id)
        if self._sync is not None:
            return self.try_ack(worker, delivery_id)
        transition = await self._storage.settle(worker, delivery_id, "acked")
        return self._settled(transition, worker, delivery_id, "acked")

    async def nack(self, worker: str, delivery_id: int, *,
                   delay: float | None = None, now: Now = None) -> Receipt:
        """Give an owned delivery back: requeued at the tail of its priority level (not
        claimable for ``delay`` seconds, or the queue's retry policy's back-off), or
        dead-lettered after its last attempt; ``now`` (the time the delay counts from)
        as for :meth:`claim`. Refusals and repeats as for :meth:`ack`."""
        self._own()
        check_delivery_id(delivery_id)
        if delay is not None:
            return await self._nack_delayed(worker, delivery_id, delay, now)
        if self._sync is not None:
            return self.try_nack(worker, delivery_id)
        transition = await self._storage.settle(worker, delivery_id, "nacked")
        return self._settled(transition, worker, delivery_id, "nacked")

    async def extend(self, worker: str, delivery_id: int, now: Now = None) -> None:
        """Renew an owned lease until ``now + visibility_timeout``; raises
        :class:`SettlementRejected` when it is not leased to ``worker``."""
        self._own()
        check_delivery_id(delivery_id)
        at = self._now(now)
        if self._sync is not None and at is not None:
            return self.try_extend(worker, delivery_id, at)
        if not self._apply(await self._storage.extend(worker, delivery_id, at)):
            raise rejected(self.name, "extend", worker, delivery_id)
        return None

    async def reap_expired(self, now: Now = None) -> int:
        """Fail every lease with ``deadline < now``; returns how many expired."""
        self._own()
        at = self._now(now)
        if self._sync is not None and at is not None:
            return self.try_reap_expired(at)
        return self._apply(await self._storage.reap_expired(at))

    async def redrive(self, item_ids: Collection[int] | None = None) -> int:
        """Move dead letters (all, or those items) back to the pending tail."""
        self._own()
        if self._sync is not None:
            return self.try_redrive(item_ids)
        return self._apply(await self._storage.redrive(
            None if item_ids is None else ids_of(item_ids, "redrive")))
