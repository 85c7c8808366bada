"""Job: one leased delivery in a worker's hands, settled exactly once.

``async with job:`` acks when the block ends normally and nacks when it raises or is
cancelled (the item goes back to pending at once, or to the dead letters after its
last attempt). Inside :meth:`~lazily_queue.cells.work_queue.WorkQueueCell.deliveries`
over a replicated backend the ack of a block that ended normally is proposed at the end of
the event-loop iteration, together with the other blocks that ended in it (one
operation), and commits while the next jobs run; ``receipt`` is set once it has. Settling returns a
:class:`~lazily_queue.core.work.Receipt`; over replicated storage the receipt is the
state machine's record of the committed settlement, also when a retry finds the
settlement already made. A refused settlement or extension raises
:class:`~lazily_queue.errors.SettlementRejected`, as the cell's ``ack`` / ``nack`` /
``extend`` do.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import deque
from collections.abc import AsyncGenerator, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..core.work import Delivery, Receipt
from ..errors import LazilyQueueError, SettlementRejected, UnconfirmedAcks
from .message import enqueued_at
from .prefetch import hold, next_take, prefetch_size

if TYPE_CHECKING:
    from .work_batches import Now
    from .work_queue import WorkQueueCell

#: The most items one claim of
#: :meth:`~lazily_queue.cells.work_queue.WorkQueueCell.deliveries` leases over a
#: replicated backend.
DEFAULT_PREFETCH = 64
#: What the first claim of an iteration leases (at most the prefetch).
FIRST_PREFETCH = 16

log = logging.getLogger(__name__)


class Job:
    """A delivery plus the means to settle it; see the module docstring."""

    def __init__(self, cell: WorkQueueCell, delivery: Delivery,
                 acks: Acks | None = None) -> None:
        self.cell = cell
        self.delivery = delivery
        self.receipt: Receipt | None = None
        # Given by ``deliveries``: a block's ack goes there instead of being awaited.
        self._acks = acks
        self._acking: asyncio.Future[None] | None = None

    def __repr__(self) -> str:
        d = self.delivery
        state = self.receipt.outcome if self.receipt else "leased"
        return f"Job(delivery={d.delivery_id}, item={d.item_id}, attempt={d.attempt}, {state})"

    @property
    def value(self) -> Any:
        return self.delivery.value

    @property
    def message_id(self) -> int:
        """The item's id: assigned when it was pushed, the same on every delivery."""
        return self.delivery.item_id

    @property
    def headers(self) -> Mapping[str, str]:
        """The headers the item was pushed with (read-only; empty when none), the same
        on every delivery of the item."""
        return self.cell.headers_of(self.delivery.item_id)

    @property
    def enqueued_at(self) -> float | None:
        """When the item was pushed, in seconds: since the epoch on the leader's clock, or
        on the local cell's ``clock``; ``None`` when the backend keeps no enqueue time."""
        return enqueued_at(self.delivery.enqueued)

    @property
    def delivery_count(self) -> int:
        """How many times the item has been delivered, this delivery included."""
        return self.delivery.attempt

    @property
    def settled(self) -> bool:
        return self.receipt is not None

    async def ack(self) -> Receipt:
        """Mark the work done."""
        return await self._settle("acked")

    async def nack(self, *, delay: float | None = None) -> Receipt:
        """Give the item back: requeued (not claimable for ``delay`` seconds, or the
        queue's retry back-off), or dead-lettered after the last attempt."""
        if delay is not None and self.receipt is None and self._acking is None:
            d = self.delivery
            self.receipt = await self.cell.nack(d.worker, d.delivery_id, delay=delay)
            return self.receipt
        return await self._settle("nacked")

    async def extend(self, now: Any = None) -> None:
        """Renew the lease for another visibility timeout (long jobs); raises
        :class:`SettlementRejected` when the lease is gone."""
        await self.cell.extend(self.delivery.worker, self.delivery.delivery_id, now)

    async def _settle(self, outcome: str) -> Receipt:
        if self._acking is not None and self.receipt is None:
            if outcome != "acked":
                raise SettlementRejected(
                    f"delivery {self.delivery.delivery_id} is already being acked")
            await asyncio.shield(self._acking)
            if self.receipt is None:
                raise SettlementRejected(
                    f"delivery {self.delivery.delivery_id}: its ack was refused")
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
        if self.receipt is not None or self._acking is not None:
            return
        if exc_type is None:
            if self._acks is not None:
                self._acking = self._acks.add(self)
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


class Acks:
    """The background acks of one ``deliveries`` iteration: the blocks that ended in one
    event-loop iteration are acked together, in one operation (one commit), at the end
    of that iteration."""

    def __init__(self, cell: WorkQueueCell, worker: str) -> None:
        self.cell = cell
        self.worker = worker
        self._loop = asyncio.get_running_loop()
        self._pending: list[Job] = []
        self._batch: asyncio.Future[None] | None = None
        self._committing: list[asyncio.Future[None]] = []
        self._failed: list[int] = []  # deliveries whose batch did not commit
        self._cause: BaseException | None = None
        self._refused: list[int] = []
        _LIVE_ACKS.add(self)

    def add(self, job: Job) -> asyncio.Future[None]:
        """Queue ``job``'s ack; the future resolves once its batch has committed."""
        if self._batch is None:
            self._batch = self._loop.create_future()
            self._loop.call_soon(self.flush)
        self._pending.append(job)
        return self._batch

    def flush(self) -> None:
        """Propose the queued acks now (one operation)."""
        jobs, self._pending = self._pending, []
        batch, self._batch = self._batch, None
        if batch is None or not jobs:
            return
        task = asyncio.ensure_future(self._commit(jobs, batch))
        self._committing.append(task)

    async def _commit(self, jobs: list[Job], batch: asyncio.Future[None]) -> None:
        ids = [j.delivery.delivery_id for j in jobs]
        try:
            receipts = await self.cell.ack_many(self.worker, ids)
        except asyncio.CancelledError as exc:
            self._failed.extend(ids)
            self._cause = self._cause or exc
            batch.cancel()
            raise
        except Exception as exc:
            self._failed.extend(ids)
            self._cause = self._cause or exc
            if not batch.done():
                batch.set_exception(exc)
                batch.exception()  # retrieved here; the iterator reports it
            return
        for job, receipt in zip(jobs, receipts, strict=True):
            job.receipt = receipt
        batch.set_result(None)
        self._refused.extend(i for i, r in zip(ids, receipts, strict=True) if r is None)

    def proposed(self) -> list[asyncio.Future[None]]:
        """Propose the queued acks now; the batches still committing."""
        self.flush()
        return list(self._committing)

    async def settled(self) -> bool:
        """Wait for every proposed batch; ``False`` when one failed or was refused
        (:meth:`error` tells)."""
        while self._committing:
            done, self._committing = self._committing, []
            await asyncio.gather(*done, return_exceptions=True)
        return not (self._failed or self._refused)

    def error(self) -> LazilyQueueError | None:
        """What went wrong with the acks waited for since the last call: an
        :class:`UnconfirmedAcks` when a batch did not commit, a
        :class:`SettlementRejected` when acks were refused; ``None`` when nothing did."""
        failed, refused, cause = self._failed, self._refused, self._cause
        self._failed, self._refused, self._cause = [], [], None
        if not failed:
            if not refused:
                return None
            from .work_scheduling import rejected

            return rejected(self.cell.name, "ack", self.worker, refused[0])
        shown_ids = ", ".join(map(str, failed[:10])) + (", ..." if len(failed) > 10 else "")
        also = f"; {len(refused)} other(s) were refused" if refused else ""
        error = UnconfirmedAcks(
            f"{len(failed)} background ack(s) of worker {self.worker!r} on work queue "
            f"{self.cell.name!r} did not commit (deliveries {shown_ids}){also}: {cause}",
            cell=self.cell.name, worker=self.worker, delivery_ids=failed)
        error.__cause__ = cause
        return error


#: The background acks of the ``deliveries`` iterations alive now (see
#: :func:`settle_background_acks`).
_LIVE_ACKS: weakref.WeakSet[Acks] = weakref.WeakSet()


async def settle_background_acks(storages: Iterable[object]) -> None:
    """Propose the background acks queued by the ``deliveries`` iterations of the work
    queues (and consumer groups) over ``storages``, and wait until they have committed
    or failed (the iterator still reports a failure).

    A client calls it before it closes: a loop that breaks out of ``deliveries()``
    leaves the acks of its last blocks queued, and the iterator's finalizer, which would
    propose them, runs only after the client has closed."""
    owned = {id(storage) for storage in storages}
    live = [acks for acks in list(_LIVE_ACKS) if id(acks.cell.storage) in owned]
    committing = [task for acks in live for task in acks.proposed()]
    if committing:
        await asyncio.wait(committing)


async def deliver(
    cell: WorkQueueCell, worker: str, prefetch: int | None, now: Now
) -> AsyncGenerator[Job, None]:
    """``WorkQueueCell.deliveries``: claim batches, hand out jobs, ack in the background.

    A prefetched job whose lease has (by this process's clock, measured from the claim's
    answer) less than a tenth of the visibility timeout left is not handed out. The acks
    queued so far are proposed in the same loop turn as the next claim, so they commit
    with it; before that claim's jobs are handed out every earlier ack has committed, or
    the iteration ends. When the iteration ends, the prefetched jobs not handed out are
    released (back to the head of pending, attempts not counted) and the background
    acks are awaited: those that did not commit raise :class:`UnconfirmedAcks` (refused
    ones :class:`SettlementRejected`), also in place of a failed claim; a cancelled
    iteration stays cancelled, the error logged and noted on the ``CancelledError``.
    """
    size = prefetch_size(prefetch, DEFAULT_PREFETCH)
    loop = asyncio.get_running_loop()
    acks = Acks(cell, worker) if size > 1 else None
    take = min(size, FIRST_PREFETCH)
    unstarted: deque[Delivery] = deque()

    async def release(leases: list[Delivery]) -> None:
        await cell.release(worker, [d.delivery_id for d in leases])

    held = hold(cell.storage, unstarted, release)
    ending: BaseException | None = None
    try:
        while True:
            if acks is not None:
                acks.flush()
            started = loop.time()
            leased = await cell.claim_many(worker, take, now=now)
            claimed = loop.time()
            stale_at = claimed + cell.lease_seconds * 0.9
            unstarted.extend(leased)
            if acks is not None and not await acks.settled():
                break
            while unstarted:
                if len(unstarted) < len(leased) and loop.time() >= stale_at:
                    stale = list(unstarted)
                    unstarted.clear()
                    await release(stale)
                    break
                yield Job(cell, unstarted.popleft(), acks)
            take = next_take(take, size, full=len(leased) == take, took=claimed - started,
                             handed_out=loop.time() - claimed)
    except BaseException as exc:  # GeneratorExit (aclose) included
        ending = exc
        raise
    finally:
        held.forget()
        leftover = list(unstarted)  # taken out: return_taken must not release them again
        unstarted.clear()
        error = await asyncio.shield(_wind_up(cell, worker, leftover, acks))
        if error is not None:
            if ending is None or isinstance(ending, (Exception, GeneratorExit)):
                raise error from error.__cause__  # a claim's failure is its __context__
            log.warning("%s", error)  # cancelled: that stays what the caller sees
            ending.add_note(str(error))


async def _wind_up(
    cell: WorkQueueCell, worker: str, unstarted: list[Delivery], acks: Acks | None
) -> LazilyQueueError | None:
    if unstarted:
        try:
            await cell.release(worker, [d.delivery_id for d in unstarted])
        except Exception:  # the leases expire instead; the items are redelivered then
            log.warning("could not release %d prefetched job(s) of %s", len(unstarted),
                        worker, exc_info=True)
    if acks is None:
        return None
    acks.flush()
    await acks.settled()
    return acks.error()
