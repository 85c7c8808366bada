"""The ``local`` backend: in-process cells, ops issued in one of three flavors.

- ``sync``: the synchronous core (``try_push``, ``try_publish``, ``try_claim``, ...),
  called on the loop thread;
- ``async``: the awaitables that do not wait (``offer`` / ``poll`` / ``close``,
  ``publish``, ``poll`` for a topic's advance and a work queue's claim, ...);
- ``threadsafe``: the synchronous core called from a worker thread through a
  :class:`~lazily_queue.threads.LoopBridge`, so it runs on the owning loop.

A refused ack or nack raises :class:`~lazily_queue.errors.SettlementRejected`; the
adapters answer the fixtures' ``false`` for it, and for a repeated settlement a backend
answered with its first receipt (``duplicate``).

``local-generic`` is the same backend over a ``VecDequeStorage`` subclass that does
not declare the ``reporting_ops`` capability, so the QueueCell takes its generic path
instead of the deque's fast path.
"""

from __future__ import annotations

import time
from typing import Any, TypeVar

from ..cells.queue import QueueCell
from ..cells.topic import TopicCell
from ..cells.work_queue import WorkQueueCell
from ..core.limited_topic import LimitedTopic
from ..core.limited_work import LimitedWorkQueue
from ..core.scheduling import RetryPolicy
from ..core.topic import TopicCore
from ..core.work import WorkQueueCore
from ..reactive import Context
from ..storage.capabilities import StorageCapabilities
from ..storage.local import VecDequeStorage
from ..storage.local_expiry import ExpiringDequeStorage
from ..storage.local_limited import LimitedDequeStorage, LimitedExpiringDequeStorage
from ..storage.local_topic import LocalTopicStorage
from ..storage.local_topic_expiry import ExpiringTopicStorage
from ..storage.local_work import LocalWorkQueueStorage
from ..storage.local_work_expiry import ExpiringWorkQueueStorage
from .backend import (
    Backend,
    QueueAdapter,
    QueueInitial,
    TopicAdapter,
    TopicInitial,
    WorkQueueAdapter,
    WorkQueueInitial,
    register_backend,
)
from .local_adapters import Invoker, LocalQueueAdapter, LocalTopicAdapter, LocalWorkQueueAdapter

T = TypeVar("T")


class GenericDequeStorage(VecDequeStorage[T]):
    """The reference deque seen through the generic storage seam (no fast path)."""

    __slots__ = ()

    capabilities = StorageCapabilities(sync=True, peek=True, dedup=True, messages=True,
                                       headers=True)


class LocalBackend(Backend):
    """In-process cells on a fresh reactive context per model."""

    def __init__(self, *, generic_storage: bool = False) -> None:
        self._generic = generic_storage

    async def queue(self, initial: QueueInitial, flavor: str) -> QueueAdapter:
        storage_type = GenericDequeStorage if self._generic else VecDequeStorage
        storage: VecDequeStorage[Any] = (
            LimitedExpiringDequeStorage(initial.limits, ttl=initial.ttl, clock=self.clock)
            if initial.expiry and initial.limits is not None
            else ExpiringDequeStorage(initial.capacity, ttl=initial.ttl, clock=self.clock)
            if initial.expiry else storage_type(initial.capacity) if initial.limits is None
            else LimitedDequeStorage(initial.limits))
        cell: QueueCell[Any] = QueueCell(storage, context=Context(name="conformance"))
        for value in initial.elements:
            if cell.try_push(value) is not None:
                raise ValueError(f"cannot seed {value!r} into the queue")
        if initial.closed:
            cell.try_close()
        return LocalQueueAdapter(cell, Invoker(flavor))

    async def topic(self, initial: TopicInitial, flavor: str) -> TopicAdapter:
        if initial.max_age is not None:
            storage: ExpiringTopicStorage[Any] = ExpiringTopicStorage(
                max_age=initial.max_age, clock=self.clock)
            storage.core = TopicCore.from_snapshot(_topic_snapshot(initial))
            if initial.limits is not None:  # the two declarations combine
                storage.core = LimitedTopic.limited(storage.core, initial.limits)
            return LocalTopicAdapter(TopicCell(storage, context=Context(name="conformance")),
                                     Invoker(flavor))
        if initial.limits is not None:
            core = LimitedTopic.limited(TopicCore.from_snapshot(_topic_snapshot(initial)),
                                        initial.limits)
            cell: TopicCell[Any] = TopicCell(LocalTopicStorage(core, clock=time.time),
                                             context=Context(name="conformance"))
        else:
            cell = TopicCell.from_snapshot(  # stamped as a leader stamps
                _topic_snapshot(initial), context=Context(name="conformance"), clock=time.time
            )
        return LocalTopicAdapter(cell, Invoker(flavor))

    async def restart(self, adapter: TopicAdapter) -> TopicAdapter:
        if not isinstance(adapter, LocalTopicAdapter):
            raise TypeError(f"cannot restart {type(adapter).__name__} on the local backend")
        old = adapter.cell
        snapshot = await adapter._invoke.sync_only(old.snapshot)
        cell: TopicCell[Any] = TopicCell.from_snapshot(snapshot, context=old.ctx, name=old.name,
                                                       clock=time.time)
        return LocalTopicAdapter(cell, adapter._invoke, lease_unit=adapter.lease_unit)

    async def work_queue(self, initial: WorkQueueInitial, flavor: str) -> WorkQueueAdapter:
        retry = None if initial.retry is None else RetryPolicy.from_list(initial.retry)
        core = (WorkQueueCore(initial.visibility_timeout, initial.max_deliveries, retry=retry)
                if initial.limits is None  # a retry policy counts fixture time units
                else LimitedWorkQueue(initial.visibility_timeout, initial.max_deliveries,
                                      limits=initial.limits, retry=retry))
        storage = (ExpiringWorkQueueStorage(core, clock=self.clock) if initial.expiry
                   else LocalWorkQueueStorage(core))
        cell = WorkQueueCell(storage, context=Context(name="conformance"))
        return LocalWorkQueueAdapter(cell, Invoker(flavor))


def _topic_snapshot(initial: TopicInitial) -> dict[str, Any]:
    return {
        "base_offset": initial.base_offset,
        "elements": list(initial.elements),
        "subscriptions": {
            sid: {"durability": r.durability, "connected": r.connected, "cursor": r.cursor}
            for sid, r in initial.subscriptions.items()
        },
    }


register_backend("local", LocalBackend)
register_backend("local-generic", lambda: LocalBackend(generic_storage=True))

__all__ = ["GenericDequeStorage", "Invoker", "LocalBackend", "LocalQueueAdapter",
           "LocalTopicAdapter", "LocalWorkQueueAdapter"]
