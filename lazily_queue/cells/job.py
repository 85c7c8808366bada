"""Job: one leased delivery in a worker's hands, settled exactly once.

``async with job:`` acks when the block ends normally and nacks when it raises or is
cancelled (the item goes back to pending at once, or to the dead letters after its
last attempt). Settling returns a :class:`~lazily_queue.core.work.Receipt`; over
replicated storage the receipt is the state machine's record of the committed
settlement, also when a retry finds the settlement already made. A refused settlement
or extension raises :class:`~lazily_queue.errors.SettlementRejected`, as the cell's
``ack`` / ``nack`` / ``extend`` do.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..core.work import Delivery, Receipt
from ..errors import SettlementRejected

if TYPE_CHECKING:
    from .work_queue import WorkQueueCell


class Job:
    """A delivery plus the means to settle it; see the module docstring."""

    def __init__(self, cell: WorkQueueCell, delivery: Delivery) -> None:
        self.cell = cell
        self.delivery = delivery
        self.receipt: Receipt | None = None

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
            await self.ack()
            return
        # Give the item back at once; shielded so a cancelled worker still releases it.
        await asyncio.shield(self._release())

    async def _release(self) -> None:
        try:
            await self.nack()
        except SettlementRejected:
            pass
