"""The scheduling half of :class:`~.work_queue.WorkQueueCell`: priorities, delayed pushes,
delayed nacks and the wait of a consumer for a delayed item to fall due.

Arguments are checked (:mod:`lazily_queue.core.scheduling`) before anything is applied
or proposed; a backend without the ``scheduling`` capability refuses them with
:class:`~lazily_queue.errors.UnsupportedOperation` naming the backend.

A consumer waiting in ``claim`` wakes when an item becomes claimable. On a backend with
its own clock (Raft) a delayed item becomes claimable by a committed operation (a claim,
or the ``promote`` the leader's maintenance proposes once the leader's clock passes the
item's due time), which every member applies, so waiting consumers on every member wake
from its change report. On a local backend the cell's clock is the only clock: the
waiting consumer also wakes at the earliest due time (read in the clock's unit, seconds)
and claims again, which makes the due items claimable.
"""

from __future__ import annotations

from typing import Any

from ..core.scheduling import check_delay
from ..core.work import PendingItem, Receipt, WorkTransition
from ..errors import SettlementRejected, UnsupportedOperation, shown
from ..reactive import Context, wait_until
from ..storage.capabilities import StorageCapabilities
from ..storage.work import SchedulingWorkQueueStorage, WorkQueueStorage, as_scheduling_work_queue
from .loop_owner import LoopOwned
from .work_batches import Clock, Now


class WorkQueueScheduling(LoopOwned):
    """What a work queue cell adds for scheduling (the cell sets up what is declared)."""

    name: str
    ctx: Context
    clock: Clock | None
    _caps: StorageCapabilities
    _storage: WorkQueueStorage

    def _apply(self, transition: WorkTransition[Any]) -> Any:
        raise NotImplementedError

    def _now(self, now: Now) -> float | None:
        raise NotImplementedError

    def _has_pending(self) -> bool:
        raise NotImplementedError

    def _scheduling(self, what: str, fix: str = "push without it") -> SchedulingWorkQueueStorage:
        storage = as_scheduling_work_queue(self._storage)
        if storage is None:
            raise UnsupportedOperation(
                f"{self.name}: {type(self._storage).__name__} does not support {what} "
                f"(no 'scheduling' capability); {fix}")
        return storage

    def _delayed_len(self) -> int:
        storage = as_scheduling_work_queue(self._storage)
        return 0 if storage is None else storage.delayed_len()

    async def _nack_delayed(self, worker: str, delivery_id: int, delay: object,
                            now: Now = None) -> Receipt:
        wait = check_delay(delay)
        storage = self._scheduling("nack(delay=)", "nack without delay= (the job is "
                                   "delivered again at once)")
        transition = await storage.nack_delayed(worker, delivery_id, wait, self._now(now))
        receipt: Receipt | None = self._apply(transition)
        if receipt is None:
            raise rejected(self.name, "nack", worker, delivery_id)
        return receipt

    async def promote_due(self, now: Now = None) -> int:
        """Make every delayed item due at ``now`` claimable; returns how many (a claim
        does it too). A backend with its own clock (Raft) promotes at its own stamp only
        and refuses an explicit ``now`` (``UnsupportedOperation``); a replicated
        leader's maintenance promotes on its own, and a cluster's client may not."""
        self._own()
        storage = self._scheduling("delayed delivery", "nothing is ever delayed on it")
        at = None if now is None and self._caps.own_clock else self._now(now)
        return int(self._apply(await storage.promote_due(at)))

    def delayed(self) -> list[tuple[float, PendingItem]]:
        """``(due, item)`` of the items not claimable yet, in the order they will be (due
        in the backend's time unit: the cell's clock, or the leader's ms)."""
        storage = as_scheduling_work_queue(self._storage)
        return [] if storage is None else storage.delayed()

    def pending_by_priority(self) -> dict[int, int]:
        """Claimable items of each priority level (levels with none left out)."""
        storage = as_scheduling_work_queue(self._storage)
        if storage is None:
            n = self._storage.pending_len()
            return {0: n} if n else {}
        return storage.pending_by_priority()

    async def _wait_for_work(self, now: Now) -> None:
        """Wait until an item is claimable (or, on a local backend, the earliest due
        time of a delayed item on the cell's clock has come)."""
        due_in = self._due_in(now)
        if due_in is None:
            await wait_until(self._has_pending, context=self.ctx)
            return
        if due_in <= 0:  # due already: make it claimable, the caller claims again
            await self.promote_due(now)
            return
        try:
            await wait_until(self._has_pending, context=self.ctx, timeout=due_in)
        except TimeoutError:
            return

    def _due_in(self, now: Now) -> float | None:
        if self._caps.own_clock:
            return None  # the leader's maintenance makes delayed items claimable
        storage = as_scheduling_work_queue(self._storage)
        due = None if storage is None else storage.next_due()
        if due is None or not (callable(now) or (now is None and self.clock is not None)):
            return None
        return due - self._now_value(now)

    def _now_value(self, now: Now) -> float:
        at = self._now(now)
        return 0.0 if at is None else at


def rejected(queue: str, verb: str, worker: str, delivery_id: int) -> SettlementRejected:
    return SettlementRejected(
        f"{queue}: {verb} of delivery {shown(delivery_id)} by {shown(worker)} was refused: the "
        "lease is "
        "gone (it expired and the item was redelivered, it was settled, or it belongs to "
        "another worker)"
    )
