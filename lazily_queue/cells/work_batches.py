"""The batch operations of :class:`~.work_queue.WorkQueueCell`: lease several items,
settle several deliveries, give unstarted leases back (each one commit over a
replicated backend)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from ..core.work import Delivery, Receipt, WorkTransition
from ..core.work_items import check_count
from ..reactive import Context
from ..storage.work import SyncWorkQueueStorage, WorkQueueStorage
from .deadline import Deadline
from .loop_owner import LoopOwned
from .push_checks import delivery_ids_of

R = TypeVar("R")

Clock = Callable[[], float]
Now = float | Clock | None


class WorkQueueBatches(LoopOwned):
    """The batch half of a work queue cell's awaitable surface (the cell sets up what is
    declared here)."""

    name: str
    ctx: Context
    _sync: SyncWorkQueueStorage | None
    _storage: WorkQueueStorage
    _unreachable: Callable[[], Exception | None] | None

    def _apply(self, transition: WorkTransition[R]) -> R:
        raise NotImplementedError

    def _now(self, now: Now) -> float | None:
        raise NotImplementedError

    def _has_pending(self) -> bool:
        raise NotImplementedError

    def _check_worker(self, worker: str, now: Now) -> None:
        raise NotImplementedError

    def try_claim(self, worker: str, now: float) -> Delivery | None:
        raise NotImplementedError

    async def _wait_for_work(self, now: Now) -> None:
        raise NotImplementedError

    async def poll_many(self, worker: str, n: int, now: Now = None) -> list[Delivery]:
        """Lease up to ``n`` of the oldest pending items without waiting (in order; an
        empty list when nothing is pending). Over a replicated backend, one commit."""
        self._own()
        check_count(n)
        at = self._now(now)
        if self._sync is None or at is None:
            return self._apply(await self._storage.poll_many(worker, n, at))
        leased: list[Delivery] = []
        while len(leased) < n:
            delivery = self.try_claim(worker, at)
            if delivery is None:
                break
            leased.append(delivery)
        return leased

    async def claim_many(
        self, worker: str, n: int, *, now: Now = None, timeout: float | None = None
    ) -> list[Delivery]:
        """Wait until an item is pending, then lease up to ``n`` at once (see :meth:`claim`).
        Each lease runs from the claim: items not started within the visibility timeout
        are redelivered. Only leases still held are returned (see :meth:`claim`)."""
        self._own()
        check_count(n)  # refused at once, not once an item is pending
        self._check_worker(worker, now)
        deadline = Deadline(timeout)
        while True:
            if not self._storage.is_empty():
                leased = await self.poll_many(worker, n, now)
                if leased:
                    return leased
            async with deadline.waiting(f"claim from work queue {self.name!r}: no pending item",
                                        self._unreachable):
                await self._wait_for_work(now)

    async def ack_many(self, worker: str, delivery_ids: list[int]) -> list[Receipt | None]:
        """Ack several deliveries owned by ``worker`` at once (over a replicated backend,
        one commit): a receipt per id, in order, or ``None`` for one refused as
        :meth:`ack` refuses it (the others are settled all the same)."""
        self._own()
        ids = delivery_ids_of(delivery_ids, "ack_many")
        if self._sync is not None:
            receipts: list[Receipt | None] = []
            for delivery_id in ids:
                receipts.append(self._apply(self._sync.try_settle(worker, delivery_id, "acked")))
            return receipts
        settle_many = getattr(self._storage, "settle_many", None)
        if settle_many is not None:
            many: WorkTransition[list[Receipt | None]] = await settle_many(worker, ids, "acked")
            return self._apply(many)
        each = await asyncio.gather(*(self._storage.settle(worker, i, "acked") for i in ids))
        return [self._apply(transition) for transition in each]

    async def release(self, worker: str, delivery_ids: list[int]) -> int:
        """Give back leases ``worker`` never started: the items return to the head of
        pending, in the given order, and the lease does not count as an attempt. Ids not
        leased to ``worker`` are skipped; returns how many were released."""
        self._own()
        return self._apply(await self._storage.release(
            worker, delivery_ids_of(delivery_ids, "release")))
