"""Job: one leased delivery in a worker's hands, settled exactly once.

``async with job:`` acks when the block ends normally and nacks when it raises or is
cancelled (the item goes back to pending at once, or to the dead letters after its
last attempt). Inside :meth:`~lazily_queue.cells.work_queue.WorkQueueCell.deliveries`
over a replicated backend the ack of a block that ended normally commits while the next
job runs, and ``receipt`` is set once it has. Settling returns a
:class:`~lazily_queue.core.work.Receipt`; over replicated storage the receipt is the
state machine's record of the committed settlement, also when a retry finds the
settlement already made. A refused settlement or extension raises
:class:`~lazily_queue.errors.SettlementRejected`, as the cell's ``ack`` / ``nack`` /
``extend`` do.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..core.work import Delivery, Receipt
from ..errors import SettlementRejected

if TYPE_CHECKING:
    from .work_queue import Now, WorkQueueCell

#: Items one claim of :meth:`~lazily_queue.cells.work_queue.WorkQueueCell.deliveries`
#: leases over a replicated backend.
DEFAULT_PREFETCH = 64

log = logging.getLogger(__name__)


class Job:
    """A delivery plus the means to settle it; see the module docstring."""

    def __init__(self, cell: WorkQueueCell, delivery: Delivery,
                 settling: list[asyncio.Future[Any]] | None = None) -> None:
        self.cell = cell
        self.delivery = delivery
        self.receipt: Receipt | None = None
        # Given by ``deliveries``: a block's settlement goes here instead of being awaited.
        self._settling = settling

    def __repr__(self) -> str:
        d = self.delivery
        state = self.receipt.outcome if self.receipt else "leased"
        return f"Job(delivery={d.delivery_id}, item={d.item_id}, attempt={d.attempt}, {state})"

    @property
    def value(self) -> Any:
        return self.delivery.value

    @property
    def settled(self) -> bool:
        return self.receipt is not None

    async def ack(self) -> Receipt:
        """Mark the work done."""
        return await self._settle("acked")

    async def nack(self) -> Receipt:
        """Give the item back: requeued, or dead-lettered after the last attempt."""
        return await self._settle("nacked")

    async def extend(self, now: Any = None) -> None:
        """Renew the lease for another visibility timeout (long jobs); raises
        :class:`SettlementRejected` when the lease is gone."""
        await self.cell.extend(self.delivery.worker, self.delivery.delivery_id, now)

    async def _settle(self, outcome: str) -> Receipt:
        if self.receipt is not None:
            if self.receipt.outcome != outcome:
                raise SettlementRejected(
                    f"delivery {self.delivery.delivery_id} was already {self.receipt.outcome}"
                )
            return self.receipt
        d = self.delivery
        settle = self.cell.ack if outcome == "acked" else self.cell.nack
        self.receipt = await settle(d.worker, d.delivery_id)
        return self.receipt

    async def __aenter__(self) -> Job:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.receipt is not None:
            return
        if exc_type is None:
            if self._settling is not None:
                self._settling.append(asyncio.ensure_future(self.ack()))
                return
            await self.ack()
            return
        # Give the item back at once; shielded so a cancelled worker still releases it.
        await asyncio.shield(self._release())

    async def _release(self) -> None:
        try:
            await self.nack()
        except SettlementRejected:
            pass


async def deliver(
    cell: WorkQueueCell, worker: str, prefetch: int | None, now: Now
) -> AsyncIterator[Job]:
    """``WorkQueueCell.deliveries``: claim batches, hand out jobs, settle in the background.

    A prefetched job whose lease has (by this process's clock, measured from the claim's
    answer) less than a tenth of the visibility timeout left is not handed out. When the
    iteration ends, the prefetched jobs not handed out are released (back to the head
    of pending, attempts not counted) and the background settlements are awaited.
    """
    size = DEFAULT_PREFETCH if prefetch is None else prefetch
    if size < 1:
        raise ValueError(f"prefetch must be >= 1, got {prefetch!r}")
    loop = asyncio.get_running_loop()
    settling: list[asyncio.Future[Any]] = []
    unstarted: deque[Delivery] = deque()
    try:
        while True:
            await _committed(settling)
            leased = await cell.claim_many(worker, size, now=now)
            stale_at = loop.time() + cell.lease_seconds * 0.9
            unstarted.extend(leased)
            while unstarted:
                if len(unstarted) < len(leased) and loop.time() >= stale_at:
                    await cell.release(worker, [d.delivery_id for d in unstarted])
                    unstarted.clear()
                    break
                yield Job(cell, unstarted.popleft(), settling if size > 1 else None)
    finally:
        await asyncio.shield(_wind_up(cell, worker, list(unstarted), settling))


async def _wind_up(
    cell: WorkQueueCell, worker: str, unstarted: list[Delivery],
    settling: list[asyncio.Future[Any]],
) -> None:
    if unstarted:
        try:
            await cell.release(worker, [d.delivery_id for d in unstarted])
        except Exception:  # the leases expire instead; the items are redelivered then
            log.warning("could not release %d prefetched job(s) of %s", len(unstarted),
                        worker, exc_info=True)
    if settling:
        await asyncio.gather(*settling, return_exceptions=True)


async def _committed(settling: list[asyncio.Future[Any]]) -> None:
    """Wait for the background settlements; the first refused one is raised."""
    if not settling:
        return
    done, settling[:] = list(settling), []
    for outcome in await asyncio.gather(*done, return_exceptions=True):
        if isinstance(outcome, BaseException):
            raise outcome
