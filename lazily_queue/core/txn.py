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

from collections import deque
from collections.abc import Hashable
from itertools import islice
from typing import Any

from ..errors import shown
from .fifo import Fifo
from .limited_fifo import LimitedFifo
from .limited_topic import LimitedTopic
from .limited_work import LimitedWorkQueue
from .limits import DROP_OLDEST, REJECT, RULES, Quota, value_size
from .work import WorkQueueCore, check_worker

#: The most ops one transaction carries.
MAX_TXN_OPS = 1024

#: ``(code, message)`` of an op that would fail, or ``None``.
Refusal = tuple[str, str] | None


class TxnCheck:
    """What the earlier ops of one transaction leave (module docstring)."""

    __slots__ = ("_bytes", "_ids", "_promoted", "_pushed", "_settled", "_work")

    def __init__(self) -> None:
        self._pushed: dict[Hashable, int] = {}
        self._bytes: dict[Hashable, int] = {}
        #: Per work queue with limits: [items held, bytes held, pending sizes] as the
        #: transaction's earlier pushes leave them.
        self._work: dict[Hashable, list[Any]] = {}
        self._settled: set[tuple[Hashable, int]] = set()
        #: Per queue: the delayed elements an earlier push with options of this
        #: transaction made ready (it promotes those due first).
        self._promoted: dict[Hashable, int] = {}
        self._ids: set[Hashable] = set()

    def repeated_id(self, key: Hashable, in_window: bool) -> bool:
        """True when a push carrying producer id ``key`` applies nothing (the id is in
        the dedup window, or an earlier op of this transaction used it); records it."""
        if in_window or key in self._ids:
            return True
        self._ids.add(key)
        return False

    def queue_push(self, key: Hashable, name: str, fifo: Fifo[Any],
                   value: Any = None, due: int = 0) -> Refusal:
        """A push of ``value`` to ``fifo``: refused when closed (checked first) or full
        with the transaction's earlier pushes to it (a queue with limits: by its
        limits, :meth:`limited_push`). ``due``: the delayed elements this push makes
        ready before it (a push with options promotes those due; counted once)."""
        if fifo.is_closed():
            return "closed", f"queue {shown(name)} is closed"
        if isinstance(fifo, LimitedFifo):
            return self.limited_push(key, name, fifo, value)
        if due and key not in self._promoted:
            self._promoted[key] = due
        extra = self._pushed.get(key, 0)
        capacity = fifo.capacity()
        held = fifo.len() + self._promoted.get(key, 0)
        if capacity is not None and held + extra >= capacity:
            return "full", (f"queue {shown(name)} is full ({capacity} elements, "
                            f"{extra} of them pushed earlier in this transaction)"
                            if extra else f"queue {shown(name)} is full ({capacity} elements)")
        self._pushed[key] = extra + 1
        return None

    def limited_push(self, key: Hashable, name: str, fifo: LimitedFifo[Any],
                     value: Any) -> Refusal:
        """A push of ``value`` to a queue with limits: under ``reject`` refused when the
        queue with the transaction's earlier pushes to it has no room for it; under
        ``drop_oldest`` only when it is larger than ``max_bytes``. Code ``"full"``."""
        return self._quota_push(key, f"queue {shown(name)}", fifo.quota, value)

    def _quota_push(self, key: Hashable, what: str, quota: Quota, value: Any) -> Refusal:
        size = value_size(value)
        extra, extra_bytes = self._pushed.get(key, 0), self._bytes.get(key, 0)
        if quota.limits.overflow == REJECT:
            broken = quota.check(size, extra, extra_bytes)
        else:
            broken = quota.room_for(size)
            broken = broken if broken is not None and broken[1] < 0 else None
        if broken is not None:
            return "full", (f"{what} is full: its {broken[0]} limit "
                            f"({quota.limits.describe()}) refuses a push of {size} bytes"
                            + (f" after the {extra} pushed earlier in this transaction"
                               if extra else ""))
        self._pushed[key] = extra + 1
        self._bytes[key] = extra_bytes + size
        return None

    def work_push(self, key: Hashable, name: str, core: WorkQueueCore, value: Any,
                  level: int = 0, delayed: bool = False) -> Refusal:
        """A push of ``value`` to a work queue (claimable at priority ``level``, or
        ``delayed``): refused (``"full"``) only by its limits, counting the transaction's
        earlier pushes to it and the drops they make (``drop_oldest`` drops claimable
        items, lowest level first, oldest first within a level; never a delayed one)."""
        if not isinstance(core, LimitedWorkQueue):
            return None
        state = self._work.get(key)
        if state is None:
            state = self._work[key] = [core.held(), core.held_bytes,
                                       core.droppable_sizes()]
        count, held, levels = state
        size = value_size(value)
        limits = core.limits
        droppable = (deque(s for lv in sorted(levels) for s in levels[lv])
                     if limits.overflow == DROP_OLDEST else deque())
        need = 0
        for limit, rule in RULES.items():
            k = rule(limits, count, held, size, droppable)
            if k is None or k > len(droppable):
                return "full", (f"work queue {shown(name)} is full: its {limit} limit "
                                f"({limits.describe()}) refuses a push of {size} bytes")
            need = max(need, k)
        for _ in range(need):
            held -= levels[min(lv for lv, sizes in levels.items() if sizes)].popleft()
        if not delayed:
            levels.setdefault(level, deque()).append(size)
        state[0], state[1] = count - need + 1, held + size
        return None

    def topic_publish(self, key: Hashable, name: str, topic: Any, value: Any,
                      expiring: int = 0) -> Refusal:
        """A publish: refused (``"full"``) when the topic's retention limits say the
        element never fits (larger than ``max_bytes``) and, under ``reject``, when the
        topic with the transaction's earlier publishes to it has no room for it; the
        ``expiring`` elements at its head (expired when the publish applies, so gone
        before it appends) are room."""
        limits = topic.limits() if isinstance(topic, LimitedTopic) else None
        if limits is None:
            return None
        if limits.overflow == REJECT:
            if expiring and key not in self._pushed:
                self._pushed[key] = -expiring
                self._bytes[key] = -sum(islice(topic.quota.sizes, expiring))
            return self._quota_push(key, f"topic {shown(name)}", topic.quota, value)
        if limits.max_bytes is None:
            return None
        size = value_size(value)
        if size <= limits.max_bytes:
            return None
        return "full", (f"topic {shown(name)}: an element of {size} bytes never fits its "
                        f"max_bytes limit of {limits.max_bytes}")

    def settle(self, key: Hashable, name: str, core: WorkQueueCore, worker: Any,
               delivery_id: Any) -> Refusal:
        """An ack or nack: refused unless ``delivery_id`` is a live lease of ``worker``
        not settled earlier in this transaction."""
        try:
            check_worker(worker)
        except (TypeError, ValueError) as exc:
            return "bad_worker", str(exc)
        if isinstance(delivery_id, bool) or not isinstance(delivery_id, int):
            return "bad_delivery_id", f"delivery_id must be an int, got {shown(delivery_id)}"
        delivery = core.delivery(delivery_id)
        if (key, delivery_id) in self._settled:
            return "not_leased", (f"delivery {delivery_id} of work queue {shown(name)} is settled "
                                  "earlier in this transaction")
        if delivery is None or delivery.worker != worker:
            return "not_leased", (
                f"delivery {delivery_id} of work queue {shown(name)} is not leased to worker "
                f"{shown(worker)} (its lease expired and was reaped, it was settled, or it is "
                "another worker's)")
        self._settled.add((key, delivery_id))
        return None
