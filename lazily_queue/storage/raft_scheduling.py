"""Scheduling on a replicated work queue (capability ``scheduling``): priority and
delayed pushes, delayed nacks and promotions as proposals
(:mod:`lazily_queue.replicated.scheduling`).

Delays and ``not_before`` arrive in seconds and travel in milliseconds, the unit of the
replicated queue; due times are on the leader's clock (its stamp on the entry), and the
``delayed`` view reports them in the leader's milliseconds since the Unix epoch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.push_options import whole_delay_ms
from ..core.work import PendingItem, Receipt, WorkQueueCore, WorkTransition
from ..core.work_items import check_delivery_id, check_worker, given_now
from ..errors import UnsupportedOperation, shown
from ..replicated import ops as C


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else whole_delay_ms(seconds)


class RaftWorkScheduling:
    """The scheduling half of :class:`~.raft_work_queue.RaftWorkQueueStorage`."""

    name: str

    def _core(self) -> WorkQueueCore:
        raise NotImplementedError

    async def _call(self, code: int, args: list[Any], timeout: float | None,
                    on_orphan: Callable[[Any], None] | None = None) -> Any:
        raise NotImplementedError

    def delayed_len(self) -> int:
        return self._core().delayed_len()

    def next_due(self) -> float | None:
        return self._core().next_due()

    def delayed(self) -> list[tuple[float, PendingItem]]:
        return self._core().delayed()

    def pending_by_priority(self) -> dict[int, int]:
        return self._core().pending_by_priority()

    async def nack_delayed(
        self, worker: str, delivery_id: int, delay: float, now: float | None, *,
        timeout: float | None = None,
    ) -> WorkTransition[Receipt | None]:
        """A nack whose item is claimable again ``delay`` seconds after ``now`` (the
        leader's stamp when ``None``)."""
        _, mask, receipt, duplicate = await self._call(
            C.WORK_NACK_DELAYED,
            [self.name, check_worker(worker), check_delivery_id(delivery_id), _ms(delay),
             given_now(now)],
            timeout)
        if receipt is None:
            return WorkTransition(None, mask)
        delivery_id, item_id, who, how, settled_at = receipt
        return WorkTransition(Receipt(self.name, delivery_id, item_id, who, how, settled_at,
                                      bool(duplicate)), mask)

    async def promote_due(
        self, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        """Make the items due at the leader's stamp claimable (``WORK_PROMOTE`` carries no
        time, so ``now`` must be ``None``; only members propose it, never a client)."""
        if now is not None:
            raise UnsupportedOperation(
                f"{self.name}: a replicated work queue promotes delayed items at the "
                f"leader's stamp, never at a given time (got now={shown(now)}); call "
                "promote_due() without now, or let the leader's maintenance promote them")
        moved, mask = await self._call(C.WORK_PROMOTE, [self.name], timeout)
        return WorkTransition(moved, mask)
