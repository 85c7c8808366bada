"""Transactions: settle claimed jobs and produce to other cells in one atomic step.

::

    async with node.transaction() as tx:      # or lazily_queue.transaction() for local cells
        tx.ack(job)                           # a job claimed before the block
        sent = tx.push(results, transform(job.value))
        tx.publish(audit, {"done": job.delivery.item_id}, msg_id=f"audit-{job.value}")
    print(sent.result)                        # available once committed

Inside the block the ops are collected, not applied: ``push`` (a queue or a work queue),
``publish`` (a topic), ``ack`` and ``nack`` (a :class:`~lazily_queue.cells.job.Job`, or
a work queue with a worker and a delivery id),
each push or publish with an optional producer ``msg_id`` and the other options its
cell's own ``push`` / ``publish`` takes (``headers``, ``ttl``; a queue's and a work
queue's delivery time, ``delay`` or ``not_before``; a work queue's ``priority``),
checked where the op is added. When the block ends without
an exception they are applied as one step, all or none: every op is checked against
the state as the earlier ops of the same transaction leave it, and if one would fail
(a full or closed queue, a lease that was reaped, settled or is another worker's, an
object deleted meanwhile) nothing applies and :class:`TransactionAborted` names that
op and its cause. When the block raises nothing is proposed. Pops and claims are not
transaction ops: their results would arrive only after the commit, too late for the
block to use them; claim before the block (the lease keeps the item from others) and
settle inside it.

A transaction belongs to one backend: a node's (or a client's) transaction takes that
node's (client's) cells and is one replicated entry; :func:`transaction` takes cells of
the in-process backends (the deque, the local topic and work queue) and applies in one
synchronous step. A cell of any other backend raises :class:`TransactionUnsupported`
where it is added.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from ..cells.job import Job
from ..cells.queue import QueueCell
from ..cells.topic import TopicCell
from ..cells.work_queue import WorkQueueCell
from ..core.dedup import check_msg_id
from ..core.headers import Headers, check_headers
from ..core.push_options import PushOptions
from ..core.topic_options import publish_options
from ..core.txn import MAX_TXN_OPS
from ..core.work_options import WorkPushOptions, work_options
from ..errors import (
    SettlementRejected,
    TransactionAborted,
    TransactionError,
    TransactionUnsupported,
    shown,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Transaction", "TransactionAborted", "TransactionError", "TransactionUnsupported",
           "TxOp", "transaction"]

Cell = QueueCell[Any] | TopicCell[Any] | WorkQueueCell


class TxOp:
    """One op of a transaction; :attr:`result` once the transaction committed (``None``
    for a queue push, the offset of a publish, the ``item_id`` of a work-queue push, the
    :class:`~lazily_queue.core.work.Receipt` of an ack or nack)."""

    __slots__ = ("_result", "cell", "done", "headers", "job", "kind", "lease", "msg_id",
                 "options", "value")

    def __init__(self, kind: str, cell: Cell, value: Any = None, msg_id: str | None = None,
                 lease: tuple[str, int] | None = None, job: Job | None = None,
                 headers: Headers | None = None, options: PushOptions | None = None) -> None:
        self.kind = kind
        self.cell = cell
        self.value = value
        self.msg_id = msg_id
        #: The element's headers (checked; ``None``: none).
        self.headers = headers
        #: A queue push's options when it has a ``ttl`` or a delivery time, a work-queue
        #: push's (a :class:`~lazily_queue.core.work_options.WorkPushOptions`) when it
        #: has a ``ttl``, a delivery time or a priority, a topic publish's when it has a
        #: ``ttl`` (they hold its ``msg_id`` and ``headers`` too); ``None`` otherwise.
        self.options = options
        #: ``(worker, delivery_id)`` of an ack or nack.
        self.lease = lease
        self.job = job
        self.done = False
        self._result: Any = None

    def __repr__(self) -> str:
        return f"TxOp({self.kind} {self.cell.name!r}{', committed' if self.done else ''})"

    @property
    def result(self) -> Any:
        if not self.done:
            raise TransactionError(f"{self.kind} to {self.cell.name!r}: its transaction has "
                                   "not committed; read the result after the block")
        return self._result

    def resolve(self, result: Any) -> None:
        self._result = result
        self.done = True


def _headers(cell: Cell, headers: Mapping[str, str] | None) -> Headers | None:
    """``headers`` checked (:class:`~lazily_queue.errors.InvalidHeaders`), for a cell
    whose backend keeps them (else :class:`TransactionUnsupported`)."""
    if headers is None or (checked := check_headers(headers)) is None:
        return None
    if not cell.capabilities.headers:
        raise TransactionUnsupported(
            f"{cell.name!r}: {type(cell.storage).__name__} does not keep message headers")
    return checked


def _queue_options(cell: Cell, msg_id: str | None, headers: Headers | None,
                   ttl: float | None, delay: float | None,
                   not_before: datetime | None) -> PushOptions:
    """A queue push's options checked now (the typed errors), for a queue whose backend
    takes them (else :class:`TransactionUnsupported` naming it)."""
    options = PushOptions.checked(msg_id=msg_id, headers=headers, ttl=ttl, delay=delay,
                                  not_before=not_before)
    _capable(cell, options.ttl_ms is not None, options.delayed, False)
    return options


def _work_options(cell: WorkQueueCell, msg_id: str | None, headers: Headers | None,
                  ttl: float | None, priority: int, delay: float | None,
                  not_before: datetime | None) -> WorkPushOptions | None:
    """A work-queue push's options checked now as ``WorkQueueCell.push`` checks them
    (the typed errors; a delivery time needs the cell's time), ``None`` for a push with
    none of them; :class:`TransactionUnsupported` naming a capability the backend
    lacks."""
    options = work_options(msg_id=msg_id, headers=headers, ttl=ttl, priority=priority,
                           delay=delay, not_before=not_before)
    if options is None or not (options.scheduled or options.ttl_ms is not None):
        return None
    _capable(cell, options.ttl_ms is not None, options.delayed, options.priority is not None)
    if options.delayed:
        cell._now(None)  # the time a delay counts from: a cell without one raises here
    return options


def _capable(cell: Cell, ttl: bool, delayed: bool, priority: bool) -> None:
    caps = cell.capabilities
    lacking = ("expiry" if ttl and not caps.expiry
               else "scheduling" if (delayed or priority) and not caps.scheduling else None)
    if lacking is not None:
        what = ("a ttl" if lacking == "expiry" else "a delivery time" if delayed
                else "a priority")
        raise TransactionUnsupported(
            f"{cell.name!r}: {type(cell.storage).__name__} has no {lacking} capability, so "
            f"its push cannot take {what}")


class Backend(Protocol):
    """Where a transaction's ops apply (:mod:`.replicated`, :mod:`.local`)."""

    def admit(self, op: TxOp) -> None:
        """Raise :class:`TransactionUnsupported` unless ``op``'s cell is this backend's."""
        ...

    async def commit(self, ops: Sequence[TxOp]) -> None:
        """Apply ``ops`` all or none and resolve each; raise :class:`TransactionAborted`."""
        ...


class Transaction:
    """The ops of one transaction (module docstring); use it as ``async with``."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._ops: list[TxOp] = []
        self._leases: set[tuple[int, int]] = set()
        #: ``"open"``, ``"committing"``, then ``"committed"``, ``"aborted"`` (nothing
        #: applied), ``"failed"`` (an error that may leave the outcome unknown, all or
        #: none) or ``"discarded"`` (the block raised: nothing proposed).
        self.state = "open"

    def __repr__(self) -> str:
        return f"Transaction({len(self._ops)} ops, {self.state})"

    @property
    def ops(self) -> list[TxOp]:
        return list(self._ops)

    @property
    def results(self) -> list[Any]:
        """Every op's result, in order, once committed."""
        return [op.result for op in self._ops]

    def _add(self, op: TxOp) -> TxOp:
        if self.state != "open":
            raise TransactionError(f"the transaction is {self.state}; start another one")
        if len(self._ops) >= MAX_TXN_OPS:
            raise TransactionUnsupported(f"a transaction carries at most {MAX_TXN_OPS} ops")
        self._backend.admit(op)
        self._ops.append(op)
        return op

    def push(self, cell: QueueCell[Any] | WorkQueueCell, value: Any, *,
             msg_id: str | None = None, headers: Mapping[str, str] | None = None,
             ttl: float | None = None, delay: float | None = None,
             not_before: datetime | None = None, priority: int = 0) -> TxOp:
        """Push ``value`` to a queue or a work queue, with the options the cell's own
        ``push`` takes, combined and checked now: ``msg_id`` (exactly once),
        ``headers``, ``ttl`` (seconds, from the commit), a delivery time ``delay``
        (seconds after the commit) or ``not_before``, and a work queue's ``priority``
        (0..9)."""
        if not isinstance(cell, (QueueCell, WorkQueueCell)):
            raise TransactionUnsupported(
                f"push takes a QueueCell or a WorkQueueCell, not {type(cell).__name__}; "
                "publish to a topic with tx.publish")
        checked = _headers(cell, headers)
        options: PushOptions | None = None
        if isinstance(cell, WorkQueueCell):
            options = _work_options(cell, msg_id, checked, ttl, priority, delay, not_before)
        elif priority:
            raise TransactionUnsupported(f"{cell.name!r}: a queue push takes no priority "
                                         "(a work queue's does)")
        elif ttl is not None or delay is not None or not_before is not None:
            options = _queue_options(cell, msg_id, checked, ttl, delay, not_before)
        return self._add(TxOp("push", cell, value,
                              None if msg_id is None else check_msg_id(msg_id),
                              headers=checked, options=options))

    def publish(self, topic: TopicCell[Any], value: Any, *, msg_id: str | None = None,
                headers: Mapping[str, str] | None = None, ttl: float | None = None) -> TxOp:
        """Publish ``value`` to a topic (exactly once with ``msg_id``; with ``headers``;
        expiring after ``ttl`` seconds, as the cell's ``publish`` takes them)."""
        if not isinstance(topic, TopicCell):
            raise TransactionUnsupported(
                f"publish takes a TopicCell, not {type(topic).__name__}; push to a queue or "
                "a work queue with tx.push")
        checked = _headers(topic, headers)
        options = None
        if ttl is not None:
            if not topic.capabilities.expiry:
                raise TransactionUnsupported(
                    f"{topic.name!r}: {type(topic.storage).__name__} has no message expiry; "
                    "publish without ttl")
            options = publish_options(msg_id, checked, ttl)
        return self._add(TxOp("publish", topic, value,
                              None if msg_id is None else check_msg_id(msg_id),
                              headers=checked, options=options))

    def ack(self, job: Job | WorkQueueCell, worker: str | None = None,
            delivery_id: int | None = None) -> TxOp:
        """Settle a job as done when the transaction commits: ``ack(job)``, or
        ``ack(work_queue, worker, delivery_id)`` as the cell's own ``ack`` takes it."""
        return self._settle("ack", job, worker, delivery_id)

    def nack(self, job: Job | WorkQueueCell, worker: str | None = None,
             delivery_id: int | None = None) -> TxOp:
        """Give a job back (requeued or dead-lettered) when the transaction commits;
        arguments as for :meth:`ack`."""
        return self._settle("nack", job, worker, delivery_id)

    def _settle(self, kind: str, target: Job | WorkQueueCell, worker: str | None,
                delivery_id: int | None) -> TxOp:
        if isinstance(target, WorkQueueCell):
            if not isinstance(worker, str) or isinstance(delivery_id, bool) \
                    or not isinstance(delivery_id, int):
                raise TransactionUnsupported(
                    f"{kind}(work_queue, worker, delivery_id) takes a str worker and an int "
                    f"delivery_id, not {shown(worker)} and {shown(delivery_id)}")
            key = (id(target), delivery_id)
            if key in self._leases:
                raise SettlementRejected(f"delivery {delivery_id} of {target.name!r} is "
                                         "already settled in this transaction")
            op = self._add(TxOp(kind, target, lease=(worker, delivery_id)))
            self._leases.add(key)
            return op
        if not isinstance(target, Job):
            raise TransactionUnsupported(f"{kind} takes a Job, or a WorkQueueCell with a "
                                         f"worker and a delivery_id, not {type(target).__name__}")
        job = target
        delivery = job.delivery
        key = (id(job.cell), delivery.delivery_id)
        if job.receipt is not None or key in self._leases or job._acking is not None:
            settled = (job.receipt.outcome if job.receipt is not None
                       else "settled in this transaction" if key in self._leases
                       else "being acked")
            raise SettlementRejected(
                f"delivery {delivery.delivery_id} of {job.cell.name!r} was already {settled}")
        op = self._add(TxOp(kind, job.cell, lease=(delivery.worker, delivery.delivery_id),
                            job=job))
        self._leases.add(key)
        return op

    async def commit(self) -> None:
        """Apply the ops collected so far, all or none (``async with`` calls it)."""
        if self.state != "open":
            raise TransactionError(f"the transaction is {self.state}; start another one")
        self.state = "committing"
        try:
            if self._ops:
                await self._backend.commit(self._ops)
        except TransactionAborted:
            self.state = "aborted"
            raise
        except BaseException:
            self.state = "failed"
            raise
        self.state = "committed"

    async def __aenter__(self) -> Transaction:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc_type is not None:
            self.state = "discarded"
            return
        await self.commit()


def transaction() -> Transaction:
    """A transaction over cells of the in-process backends (:mod:`.local`)."""
    from .local import LocalBackend

    return Transaction(LocalBackend())


def aborted(index: int, op: TxOp, code: str, message: str) -> TransactionAborted:
    """The error of a transaction whose op ``index`` would have failed with ``code``."""
    return TransactionAborted(
        f"transaction aborted, nothing applied: op {index} ({op.kind} to {op.cell.name!r}) "
        f"would fail: {code}: {message}", index=index, op=op.kind, cell=op.cell.name, code=code)
