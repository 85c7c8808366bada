"""The ``transaction`` fixture op: ops of one model committed all or none.

``{"type": "transaction", "ops": [...]}`` carries the model's transaction ops (a
queue's ``push``, a topic's ``publish``, a work queue's ``push``, ``ack`` and ``nack``,
each with its fields as the plain op takes them, a push or publish with an optional
``msg_id``). It returns one result per op once committed (``null`` for a queue push,
the offset of a publish, the item id of a work-queue push, ``true`` for a settlement),
or ``{"aborted": {"index", "code"}}`` naming the op that would have failed, in which
case nothing applied. The readers see a committed transaction as one invalidation.
A fixture with a transaction needs the backend's ``transactions`` capability.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..core.work import Receipt
from ..errors import TransactionAborted
from ..transactions import Transaction
from .compare import fail
from .engine import OpSpec

#: The transaction ops of each model.
TX_OPS: dict[str, Mapping[str, OpSpec]] = {
    "QueueCell": {"push": OpSpec(required=("value",), optional=("msg_id",))},
    "TopicCell": {"publish": OpSpec(required=("value",), optional=("msg_id",))},
    "WorkQueueCell": {
        "push": OpSpec(required=("value",), optional=("msg_id",)),
        "ack": OpSpec(required=("worker", "delivery_id")),
        "nack": OpSpec(required=("worker", "delivery_id")),
    },
}

TRANSACTION = OpSpec(required=("ops",))


def checked_ops(step: int, model: str, ops: Any) -> list[Mapping[str, Any]]:
    """The transaction's ops, or fail the fixture naming the first malformed one."""
    if not isinstance(ops, list):
        fail(step, "op.transaction.ops", f"must be an array, got {ops!r}")
    specs = TX_OPS[model]
    for index, inner in enumerate(ops):
        where = f"op.transaction.ops[{index}]"
        kind = inner.get("type") if isinstance(inner, dict) else None
        spec = specs.get(kind) if isinstance(kind, str) else None
        if spec is None:
            fail(step, where, f"a {model} transaction op is one of {sorted(specs)}, got "
                 f"{inner!r}")
        fields = set(inner) - {"type"}
        missing = [f for f in spec.required if f not in inner]
        unknown = sorted(fields - set(spec.required) - set(spec.optional))
        if missing or unknown:
            fail(step, where, f"missing field(s) {missing}, unknown field(s) {unknown}")
    return ops


async def run(tx: Callable[[], Transaction], cell: Any, ops: list[Mapping[str, Any]]) -> Any:
    """Commit ``ops`` on ``cell`` in one transaction; the fixture's answer."""
    transaction = tx()
    for op in ops:
        kind = op["type"]
        if kind == "push":
            transaction.push(cell, op["value"], msg_id=op.get("msg_id"))
        elif kind == "publish":
            transaction.publish(cell, op["value"], msg_id=op.get("msg_id"))
        elif kind == "ack":
            transaction.ack(cell, op["worker"], op["delivery_id"])
        else:
            transaction.nack(cell, op["worker"], op["delivery_id"])
    try:
        await transaction.commit()
    except TransactionAborted as exc:
        return {"aborted": {"index": exc.index, "code": exc.code}}
    return [True if isinstance(r, Receipt) else r for r in transaction.results]
