"""The all-or-none check of a transaction, shared by the local and replicated backends.

A transaction is a list of ops applied in order as one step. Before anything applies,
each op is checked against the state as the earlier ops of the same transaction leave
it; the first op that would fail aborts the whole transaction and nothing applies.
:class:`TxnCheck` holds what the earlier ops leave (pushes counted per queue,
deliveries settled, producer ids used) so that the check reads the live cores without
changing them. The ops a transaction may carry change nothing another op's check reads
except through this record: pushes only grow a queue, publishes and work-queue pushes
cannot fail once their object exists, and a settlement only removes its own lease.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from .fifo import Fifo
from .work import WorkQueueCore, check_worker

#: The most ops one transaction carries.
MAX_TXN_OPS = 1024

#: ``(code, message)`` of an op that would fail, or ``None``.
Refusal = tuple[str, str] | None


class TxnCheck:
    """What the earlier ops of one transaction leave (module docstring)."""

    __slots__ = ("_ids", "_pushed", "_settled")

    def __init__(self) -> None:
        self._pushed: dict[Hashable, int] = {}
        self._settled: set[tuple[Hashable, int]] = set()
        self._ids: set[Hashable] = set()

    def repeated_id(self, key: Hashable, in_window: bool) -> bool:
        """True when a push carrying producer id ``key`` applies nothing (the id is in
        the dedup window, or an earlier op of this transaction used it); records it."""
        if in_window or key in self._ids:
            return True
        self._ids.add(key)
        return False

    def queue_push(self, key: Hashable, name: str, fifo: Fifo[Any]) -> Refusal:
        """A push to ``fifo``: refused when closed (checked first) or full with the
        transaction's earlier pushes to it."""
        if fifo.is_closed():
            return "closed", f"queue {name!r} is closed"
        extra = self._pushed.get(key, 0)
        capacity = fifo.capacity()
        if capacity is not None and fifo.len() + extra >= capacity:
            return "full", (f"queue {name!r} is full ({capacity} elements, "
                            f"{extra} of them pushed earlier in this transaction)"
                            if extra else f"queue {name!r} is full ({capacity} elements)")
        self._pushed[key] = extra + 1
        return None

    def settle(self, key: Hashable, name: str, core: WorkQueueCore, worker: Any,
               delivery_id: Any) -> Refusal:
        """An ack or nack: refused unless ``delivery_id`` is a live lease of ``worker``
        not settled earlier in this transaction."""
        try:
            check_worker(worker)
        except (TypeError, ValueError) as exc:
            return "bad_worker", str(exc)
        if isinstance(delivery_id, bool) or not isinstance(delivery_id, int):
            return "bad_delivery_id", f"delivery_id must be an int, got {delivery_id!r}"
        delivery = core.delivery(delivery_id)
        if (key, delivery_id) in self._settled:
            return "not_leased", (f"delivery {delivery_id} of work queue {name!r} is settled "
                                  "earlier in this transaction")
        if delivery is None or delivery.worker != worker:
            return "not_leased", (
                f"delivery {delivery_id} of work queue {name!r} is not leased to worker "
                f"{worker!r} (its lease expired and was reaped, it was settled, or it is "
                "another worker's)")
        self._settled.add((key, delivery_id))
        return None
