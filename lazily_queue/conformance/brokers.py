"""The ``nats`` and ``redis`` backends: fixtures replayed on a real broker.

``lazily-queue conformance PATH --backend nats --url nats://127.0.0.1:4222`` (or
``--backend redis --url redis://127.0.0.1:6379/0``). Each replay connects, opens its
model under a fresh name, issues the ``async`` flavor (the broker storages declare no
``sync`` capability) and, before every check, waits for a mirror refresh
(``storage.sync()``), so the readers show every op that returned. Topic ``restart``
closes the connection and opens the topic again through a new one.

What the brokers lack is declared (:attr:`Backend.lacks`), and the fixtures needing it
are listed as skipped with the reason: ``logical_time`` (their leases run on the
broker's clock, so a work-queue fixture's deadlines and reaps at given times cannot be
reproduced) and ``atomic_batch`` (the pushes of one ``batch()`` are separate broker
operations). A broker backend performs no cluster ops: fixtures with them replay on
the CLI's ``--cluster-backend``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from ..cells.queue import QueueCell
from ..cells.topic import TopicCell
from ..core.queue import QueuePushError
from ..reactive import Context
from .backend import (
    Backend,
    QueueAdapter,
    QueueInitial,
    TopicAdapter,
    TopicInitial,
    UnsupportedFixtureOp,
    WorkQueueAdapter,
    WorkQueueInitial,
    register_backend,
)
from .local import Invoker, LocalQueueAdapter, LocalTopicAdapter, _topic_snapshot

#: Items the mirrors list in their views during a replay (fixtures are small).
VIEW_LIMIT = 1000

LACKS = {
    "logical_time": "leases run on the broker's clock; deadlines and reaps at the "
                    "fixture's times cannot be reproduced",
    "atomic_batch": "each push of a batch is its own broker operation, and the readers "
                    "follow the broker by refreshes, not in one invalidation",
}


class BrokerQueueAdapter(LocalQueueAdapter):
    """The async flavor over a broker queue; ``settle`` waits for a mirror refresh."""

    def elements(self) -> list[Any]:
        storage: Any = self.cell.storage
        return list(storage.elements())

    async def settle(self) -> None:
        storage: Any = self.cell.storage
        await storage.sync()

    async def push_batch(self, values: list[Any]) -> list[QueuePushError | None]:
        return [await self.cell.offer(v) for v in values]


class BrokerTopicAdapter(LocalTopicAdapter):
    async def settle(self) -> None:
        storage: Any = self.cell.storage
        await storage.sync()


class BrokerBackend(Backend):
    """Models on the broker at :attr:`url` (set by the CLI's ``--url``)."""

    flavors = ("async",)
    lacks = LACKS

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.url: str | None = None
        self.provider: Any = None
        self._run = uuid.uuid4().hex[:8]
        self._names = 0

    def _name(self, prefix: str) -> str:
        self._names += 1
        return f"conformance-{self._run}-{prefix}{self._names}"

    async def _connect(self) -> Any:
        from ..client.brokers import open_provider, scheme_of

        if not self.url:
            raise UnsupportedFixtureOp(f"backend {self.kind!r} needs a broker URL (--url)")
        if scheme_of(self.url) != self.kind:
            raise ValueError(f"backend {self.kind!r} cannot use {self.url!r}")
        return await open_provider(self.url, view_limit=VIEW_LIMIT, poll_interval=0.5)

    async def start(self) -> None:
        self.provider = await self._connect()

    async def stop(self) -> None:
        if self.provider is not None:
            await self.provider.close()
            self.provider = None

    async def queue(self, initial: QueueInitial, flavor: str) -> QueueAdapter:
        storage = self.provider.queue(self._name("q"), capacity=initial.capacity)
        cell: QueueCell[Any] = QueueCell(storage, context=Context(name="conformance"))
        for value in initial.elements:
            if await cell.offer(value) is not None:
                raise ValueError(f"cannot seed {value!r} into the queue")
        if initial.closed:
            await cell.close()
        await storage.sync()
        return BrokerQueueAdapter(cell, Invoker("async"))

    async def topic(self, initial: TopicInitial, flavor: str) -> TopicAdapter:
        storage = self.provider.topic(self._name("t"))
        await storage.restore(_topic_snapshot(initial))
        cell: TopicCell[Any] = TopicCell(storage, context=Context(name="conformance"),
                                         name=storage.name)
        return BrokerTopicAdapter(cell, Invoker("async"))

    async def restart(self, adapter: TopicAdapter) -> TopicAdapter:
        if not isinstance(adapter, BrokerTopicAdapter):
            raise TypeError(f"cannot restart {type(adapter).__name__} on a broker backend")
        old = adapter.cell
        await self.stop()
        self.provider = await self._connect()
        storage = self.provider.topic(old.name)
        await storage.sync()
        cell: TopicCell[Any] = TopicCell(storage, context=old.ctx, name=old.name)
        return BrokerTopicAdapter(cell, adapter._invoke)

    async def work_queue(self, initial: WorkQueueInitial, flavor: str) -> WorkQueueAdapter:
        raise UnsupportedFixtureOp(f"backend {self.kind!r}: {LACKS['logical_time']}")

    async def cluster_op(self, op: Mapping[str, Any]) -> None:
        raise UnsupportedFixtureOp(
            f"backend {self.kind!r} performs no cluster op ({op.get('type')!r}): the "
            "broker's own replication is not driven from here")


register_backend("nats", lambda: BrokerBackend("nats"))
register_backend("redis", lambda: BrokerBackend("redis"))
