"""The synchronous operations of :class:`~.work_queue.WorkQueueCell` (capability
``sync``: the local core); elsewhere they raise
:class:`~lazily_queue.errors.UnsupportedOperation` naming the awaitable to use."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, TypeVar

from ..core.work import Delivery, Receipt, WorkTransition
from ..storage.work import Settlement, SyncWorkQueueStorage
from .push_checks import ids_of
from .work_scheduling import rejected

R = TypeVar("R")


class WorkQueueSyncOps:
    """The ``try_*`` half of a work queue cell (the cell sets up what is declared)."""

    name: str

    def _apply(self, transition: WorkTransition[R]) -> R:
        raise NotImplementedError

    def _require_sync(self, method: str, awaitable: str) -> SyncWorkQueueStorage:
        raise NotImplementedError

    def _settled(
        self, transition: WorkTransition[Receipt | None], worker: str, delivery_id: int,
        outcome: Settlement,
    ) -> Receipt:
        raise NotImplementedError


    def try_push(self, value: Any) -> int:
        """Append ``value`` to the pending tail; returns its ``item_id``."""
        return self._apply(self._require_sync("try_push", "push(value)").try_push(value))

    def try_claim(self, worker: str, now: float) -> Delivery | None:
        """Lease the oldest pending item until ``now + visibility_timeout``, or ``None``."""
        storage = self._require_sync("try_claim", "poll(worker)")
        return self._apply(storage.try_claim(worker, now))

    def try_ack(self, worker: str, delivery_id: int) -> Receipt:
        """Settle a live delivery owned by ``worker`` as done; raises
        :class:`SettlementRejected` otherwise (no change)."""
        storage = self._require_sync("try_ack", "ack(worker, delivery_id)")
        transition = storage.try_settle(worker, delivery_id, "acked")
        return self._settled(transition, worker, delivery_id, "acked")

    def try_nack(self, worker: str, delivery_id: int) -> Receipt:
        """Fail an owned delivery: requeue at the tail, or dead-letter at the retry limit;
        raises :class:`SettlementRejected` when it is not leased to ``worker``."""
        storage = self._require_sync("try_nack", "nack(worker, delivery_id)")
        transition = storage.try_settle(worker, delivery_id, "nacked")
        return self._settled(transition, worker, delivery_id, "nacked")

    def try_extend(self, worker: str, delivery_id: int, now: float) -> None:
        """Move an owned lease's deadline to ``now + visibility_timeout``; raises
        :class:`SettlementRejected` when it is not leased to ``worker``."""
        storage = self._require_sync("try_extend", "extend(worker, delivery_id)")
        if not self._apply(storage.try_extend(worker, delivery_id, now)):
            raise rejected(self.name, "extend", worker, delivery_id)

    def try_reap_expired(self, now: float) -> int:
        """Fail every lease with ``deadline < now``; returns how many expired."""
        storage = self._require_sync("try_reap_expired", "reap_expired(now)")
        return self._apply(storage.try_reap_expired(now))

    def try_redrive(self, item_ids: Collection[int] | None = None) -> int:
        """Move dead letters back to the pending tail with ``attempts`` reset to 0."""
        storage = self._require_sync("try_redrive", "redrive(item_ids)")
        return self._apply(storage.try_redrive(
            None if item_ids is None else ids_of(item_ids, "try_redrive")))
