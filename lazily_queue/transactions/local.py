"""Transactions over the in-process backends: checked, then applied in one synchronous step.

The cells must be backed by the in-process storages (the deque, ``LocalTopicStorage``,
``LocalWorkQueueStorage``, with or without a serializer). Every op is checked with the
rules the replicated ``TXN`` uses (:class:`~lazily_queue.core.txn.TxnCheck`, the cells'
own dedup windows), then all are applied through their cells without yielding to the
event loop, inside one reactive batch per context, so no task and no reader sees part of
a transaction.
"""

from __future__ import annotations

import contextlib
from collections.abc import Coroutine, Hashable, Sequence
from typing import Any

from ..cells.loop_owner import own
from ..cells.queue import QueueCell
from ..cells.topic import TopicCell
from ..cells.work_queue import WorkQueueCell
from ..core.txn import TxnCheck
from ..core.work_options import WorkPushOptions
from ..errors import TransactionUnsupported
from ..storage.local import VecDequeStorage, _elapsed_ms
from ..storage.local_topic import LocalTopicStorage
from ..storage.local_work import LocalWorkQueueStorage
from . import TxOp, aborted

_LOCAL = (VecDequeStorage, LocalTopicStorage, LocalWorkQueueStorage)

#: See :data:`lazily_queue.replicated.transactions.Plan`.
Plan = tuple[str, Any] | None


def _raw(cell: Any) -> Any:
    storage = cell.storage
    while not isinstance(storage, _LOCAL) and hasattr(storage, "codec"):
        storage = storage.inner  # a serializing wrapper
    return storage


def _stored(cell: Any, value: Any) -> Any:
    """``value`` as ``cell``'s backend stores it (encoded by its serializer, if any)."""
    storage = cell.storage
    return storage.codec.encode(value) if hasattr(storage, "codec") else value


def _now(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro``, which must finish without suspending (a synchronous backend's)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("a local transaction op suspended")  # the backends never do


class LocalBackend:
    """Transactions over the in-process backends (module docstring)."""

    def admit(self, op: TxOp) -> None:
        storage = _raw(op.cell)
        if not isinstance(storage, _LOCAL):
            raise TransactionUnsupported(
                f"{op.kind} to {op.cell.name!r}: its backend {type(storage).__name__} is not "
                "an in-process one; lazily_queue.transaction() takes local cells only (a "
                "node's cells go in node.transaction(), a client's in client.transaction())")

    def _check(self, ops: Sequence[TxOp]) -> tuple[int, str, str] | list[Plan]:
        check = TxnCheck()
        firsts: dict[Hashable, int] = {}
        now = _elapsed_ms()
        plans: list[Plan] = []
        for index, op in enumerate(ops):
            storage = _raw(op.cell)
            plan: Plan = None
            if op.msg_id is not None:
                key = (id(storage), op.msg_id)
                found, first = storage.dedup.peek(op.msg_id, now)
                if check.repeated_id(key, found):
                    plans.append(("window", first) if found else ("repeat", firsts[key]))
                    continue
                firsts[key] = index
                plan = ("once", None)
            refusal = None
            if op.lease is not None:
                worker, delivery_id = op.lease
                refusal = check.settle(id(storage), op.cell.name, storage.core, worker,
                                       delivery_id)
            elif isinstance(op.cell, QueueCell):
                refusal = check.queue_push(id(storage), op.cell.name, storage,
                                           _stored(op.cell, op.value))
            elif isinstance(op.cell, TopicCell):
                refusal = check.topic_publish(id(storage), op.cell.name, storage.core,
                                              _stored(op.cell, op.value), _expiring(storage))
            elif isinstance(op.cell, WorkQueueCell):
                options = op.options
                # A delayed push counts as never droppable (its due time may be past by
                # the commit: then it is, and the check only refused more).
                refusal = check.work_push(
                    id(storage), op.cell.name, storage.core, _stored(op.cell, op.value),
                    0 if not isinstance(options, WorkPushOptions) else options.level,
                    options is not None and options.delayed)
            if refusal is not None:
                return index, *refusal
            plans.append(plan)
        return plans

    async def commit(self, ops: Sequence[TxOp]) -> None:
        own(op.cell for op in ops)  # another running loop holds one: nothing applied or taken
        plans = self._check(ops)
        if isinstance(plans, tuple):
            index, code, message = plans
            raise aborted(index, ops[index], code, message)
        results: list[Any] = []
        with contextlib.ExitStack() as stack:
            for ctx in {id(op.cell.ctx): op.cell.ctx for op in ops}.values():
                stack.enter_context(ctx.batch())
            for op, plan in zip(ops, plans, strict=True):
                if plan is None or plan[0] == "once":
                    result = _apply(op)
                elif plan[0] == "window":
                    _raw(op.cell).dedup.hits += 1
                    result = plan[1]
                else:
                    result = results[plan[1]]
                results.append(result)
        for op, result in zip(ops, results, strict=True):
            op.resolve(result)


def _expiring(storage: Any) -> int:
    """The elements at a local topic's head that its next publish drops as expired."""
    due = getattr(storage, "expiring_at_head", None)
    return 0 if due is None else int(due())


def _apply(op: TxOp) -> Any:
    cell = op.cell
    if op.lease is not None:
        assert isinstance(cell, WorkQueueCell)
        settle = cell.try_ack if op.kind == "ack" else cell.try_nack
        receipt = settle(*op.lease)
        if op.job is not None:
            op.job.receipt = receipt
        return receipt
    if isinstance(cell, QueueCell):
        if op.options is not None:
            _now(cell._offer_options(op.value, op.options, None))
        elif op.msg_id is None and op.headers is None:
            cell.try_push(op.value)
        else:
            _now(cell.offer(op.value, msg_id=op.msg_id, headers=op.headers))
        return None
    if isinstance(cell, TopicCell):
        ttl_ms = None if op.options is None else op.options.ttl_ms
        if op.msg_id is None and op.headers is None and ttl_ms is None:
            return cell.try_publish(op.value)
        return _now(cell.publish(op.value, msg_id=op.msg_id, headers=op.headers,
                                 ttl=None if ttl_ms is None else ttl_ms / 1000))
    if isinstance(op.options, WorkPushOptions):
        return _now(cell._push_with(op.value, op.options, None))
    if op.msg_id is None and op.headers is None:
        return cell.try_push(op.value)
    return _now(cell.push(op.value, msg_id=op.msg_id, headers=op.headers))
