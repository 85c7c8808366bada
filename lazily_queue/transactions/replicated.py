"""A node's (or a client's) transactions: one ``TXN`` entry of the replicated log.

The cells must be the owner's own (opened through it); each is declared on the cluster
before the ``TXN`` is proposed (declaring is idempotent and applies nothing a reader
sees). The ``TXN`` applies all or none on every replica
(:mod:`lazily_queue.replicated.transactions`); its retry (a member's session after a
failover, a client's through another member) returns the recorded result, so a
transaction applies at most once. An error that leaves the outcome unknown (a commit
timeout, a lost member) leaves it unknown as a single op's does: all or none applied;
give the pushes ``msg_id`` to retry them safely.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..cells.queue import QueueCell
from ..cells.topic import TopicCell
from ..core.work import Receipt
from ..errors import TransactionUnsupported
from ..replicated import ops as C
from ..storage.replicated_object import ReplicatedObject, raise_op_error
from . import TxOp, aborted

if TYPE_CHECKING:
    from ..node_cells import NodeCells


def _encoded(op: TxOp) -> Any:
    codec = getattr(op.cell.storage, "codec", None)
    return op.value if codec is None else codec.encode(op.value)


class ReplicatedBackend:
    """The transactions of ``owner``, a node or a client (module docstring)."""

    def __init__(self, owner: NodeCells) -> None:
        self.owner = owner

    def _storage(self, op: TxOp) -> ReplicatedObject:
        owner, cell = self.owner, op.cell
        router = owner._router
        table: dict[str, Any]
        storages: dict[str, Any]
        if isinstance(cell, QueueCell):
            kind, table, storages = "queue", owner._queue_cells, router.queues
        elif isinstance(cell, TopicCell):
            kind, table, storages = "topic", owner._topic_cells, router.topics
        else:
            kind, table, storages = "work_queue", owner._work_cells, router.work_queues
        if cell.name not in table:
            owner._adopt(kind, cell.name)  # a cell let go (its object deleted), held again
        if table.get(cell.name) is not cell:
            raise TransactionUnsupported(
                f"{op.kind} to {cell.name!r}: that cell is not one of {owner!r}'s (another "
                "node's, a client's or a local cell); a transaction takes the cells of the "
                "node or client that started it")
        storage: ReplicatedObject = storages[cell.name]
        owner._opened(kind, cell.name)
        return storage

    def admit(self, op: TxOp) -> None:
        self._storage(op)

    def _inner(self, op: TxOp) -> list[Any]:
        name = op.cell.name
        if op.lease is not None:
            return [C.WORK_ACK if op.kind == "ack" else C.WORK_NACK, name, *op.lease]
        if op.options is not None:  # a push's or a publish's options, in one op
            if isinstance(op.cell, QueueCell):
                return [C.QUEUE_PUSH_OPTIONS, name, op.options.to_map(), _encoded(op)]
            if isinstance(op.cell, TopicCell):
                return [C.TOPIC_PUBLISH_OPTIONS, name, op.options.to_map(), _encoded(op)]
            # a work queue's: now is the leader's stamp on the TXN entry
            return [C.WORK_PUSH_OPTIONS, name, op.options.to_map(), None, _encoded(op)]
        if op.headers is not None:
            code = (C.QUEUE_PUSH_HEADERS if isinstance(op.cell, QueueCell)
                    else C.TOPIC_PUBLISH_HEADERS if isinstance(op.cell, TopicCell)
                    else C.WORK_PUSH_HEADERS)
            return [code, name, op.headers, op.msg_id, _encoded(op)]
        once = op.msg_id is not None
        if isinstance(op.cell, QueueCell):
            code = C.QUEUE_PUSH_ONCE if once else C.QUEUE_PUSH
        elif isinstance(op.cell, TopicCell):
            code = C.TOPIC_PUBLISH_ONCE if once else C.TOPIC_PUBLISH
        else:
            code = C.WORK_PUSH_ONCE if once else C.WORK_PUSH
        return [code, name, op.msg_id, _encoded(op)] if once else [code, name, _encoded(op)]

    async def commit(self, ops: Sequence[TxOp]) -> None:
        timeout = self.owner.op_timeout
        inner = [self._inner(op) for op in ops]
        for storage in {id(s): s for s in map(self._storage, ops)}.values():
            await storage.declare(timeout=timeout)
        raw = raise_op_error(await self.owner.driver.call(C.TXN, inner, timeout=timeout))
        if raw[0] is not True:
            index, code, message = raw[1], raw[2], raw[3]
            raise aborted(index, ops[index], code, message)
        for op, result in zip(ops, raw[1], strict=True):
            op.resolve(_result(op, result))


def _result(op: TxOp, raw: Any) -> Any:
    if op.lease is not None:
        _, _, receipt, duplicate = raw
        delivery_id, item_id, worker, outcome, settled_at = receipt
        proof = Receipt(op.cell.name, delivery_id, item_id, worker, outcome, settled_at,
                        bool(duplicate))
        if op.job is not None:
            op.job.receipt = proof
        return proof
    if isinstance(op.cell, QueueCell):
        return None
    if isinstance(op.cell, TopicCell):
        return int(raw)
    return int(raw[0])
