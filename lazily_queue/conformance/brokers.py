"""The ``nats`` and ``redis`` backends: fixtures replayed on a real broker.

``lazily-queue conformance PATH --backend nats --url nats://127.0.0.1:4222`` (or
``--backend redis --url redis://127.0.0.1:6379/0``). Each replay connects, opens its
model under a fresh name, issues the ``async`` flavor (the broker storages declare no
``sync`` capability) and, before every check, waits for a mirror refresh
(``storage.sync()``), so the readers show every op that returned. Topic ``restart``
closes the connection and opens the topic again through a new one.

What the brokers lack is declared (:attr:`Backend.lacks`), and the fixtures needing it
are listed as skipped with the reason (see
:func:`~lazily_queue.conformance.work_queue.work_queue_needs` for how a work-queue
fixture's needs are read): ``logical_time`` (leases run on the broker's clock: a fixture
whose steps come after a live lease's deadline cannot be reproduced), ``tail_requeue``
(a nacked item is delivered again before the pending ones), ``redelivery_view`` (NATS:
JetStream does not say which unacknowledged messages wait for redelivery) and
``atomic_batch`` (the pushes of one ``batch()`` are separate broker operations). A
broker backend performs no cluster ops: fixtures with them replay on the CLI's
``--cluster-backend``.

A work-queue fixture that needs none of those runs with one fixture time unit as a
minute of the broker's clock (no lease expires during a replay, as none does in the
fixture). Ids are compared up to renaming: the adapter numbers the broker's item and
delivery ids from 0 in the order they first appear (a redelivery keeps its item's
number and gets a new delivery number), and a deadline is the fixture's time of the
claim plus the lease length the broker was given (one visibility timeout).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from ..cells.queue import QueueCell
from ..cells.topic import TopicCell
from ..cells.work_queue import WorkQueueCell
from ..core.queue import QueuePushError
from ..core.work import Delivery
from ..errors import SettlementRejected
from ..reactive import Context, Slot
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
from .local import _topic_snapshot
from .local_adapters import Invoker, LocalQueueAdapter, LocalTopicAdapter

#: Items the mirrors list in their views during a replay (fixtures are small).
VIEW_LIMIT = 1000

LACKS = {
    "logical_time": "leases run on the broker's clock, so a step after a live lease's "
                    "deadline (a reap that expires it, a later claim) cannot be reproduced",
    "tail_requeue": "a nacked item is delivered again before the pending items, not "
                    "requeued at the tail",
    "atomic_batch": "each push of a batch is its own broker operation, and the readers "
                    "follow the broker by refreshes, not in one invalidation",
    "messages": "the broker queues keep no message ids of their own (no messages capability)",
    "headers": "the broker cells keep no message headers (no headers capability)",
    "transactions": "a broker cell cannot take part in a transaction",
    "expiry": "the broker adapters refuse message TTLs and ages (no expiry capability: "
              "elements would expire on the broker's clock, not the replay's)",
    "replay": "the broker topic adapters subscribe at the tail only (no replay capability)",
    "replay_time": "the broker topic adapters subscribe at the tail only (no replay_time "
                   "capability)",
    "groups": "the broker topic adapters have no consumer groups (no groups capability)",
    "subscriber_delete": "the broker topic backends cannot delete a subscription (no "
                         "subscriber_delete capability)",
    "scheduling": "the broker work queues have no priorities, delays or retry policies "
                  "(no scheduling capability)",
    "queue_options": "the broker queues take a msg_id alone: no combined options and no "
                     "delayed elements (no scheduling capability)",
    "limits": "a broker bounds a queue's length with reject only (no max_bytes, no "
              "drop_oldest, no bytes or dropped readers)",
}
NATS_LACKS = {
    **LACKS,
    "redelivery_view": "JetStream does not say which unacknowledged messages wait for "
                       "redelivery, so pending() lists only never-delivered ones",
}
#: Seconds of the broker's clock per fixture time unit.
TIME_UNIT = 60.0


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


class BrokerWorkQueueAdapter(WorkQueueAdapter):
    """The async flavor over a broker work queue, ids renamed (see the module
    docstring); ``settle`` waits for a mirror refresh."""

    def __init__(self, cell: WorkQueueCell, visibility_timeout: int) -> None:
        self.cell = cell
        self.visibility_timeout = visibility_timeout
        self._items: dict[int, int] = {}
        self._deliveries: dict[int, int] = {}
        self._broker_delivery: dict[int, int] = {}
        self._deadlines: dict[int, int] = {}

    def readers(self) -> Mapping[str, Slot[Any]]:
        return self.cell.readers()

    async def settle(self) -> None:
        storage: Any = self.cell.storage
        await storage.sync()

    def _item(self, broker_id: int) -> int:
        return self._items.setdefault(broker_id, len(self._items))

    async def push(self, value: Any, msg_id: str | None = None) -> int:
        return self._item(await self.cell.push(value, msg_id=msg_id))

    async def claim(self, worker: str, now: int) -> dict[str, Any] | None:
        delivery = await self.cell.poll(worker)
        if delivery is None:
            return None
        number = self._deliveries.setdefault(delivery.delivery_id, len(self._deliveries))
        self._broker_delivery[number] = delivery.delivery_id
        self._deadlines[number] = now + self.visibility_timeout
        return self._delivery(delivery)

    def _delivery(self, delivery: Delivery) -> dict[str, Any]:
        number = self._deliveries[delivery.delivery_id]
        return {**delivery.to_dict(), "delivery_id": number,
                "item_id": self._item(delivery.item_id), "deadline": self._deadlines[number]}

    async def ack(self, worker: str, delivery_id: int) -> bool:
        return await self._settled(self.cell.ack, worker, delivery_id)

    async def nack(self, worker: str, delivery_id: int) -> bool:
        return await self._settled(self.cell.nack, worker, delivery_id)

    async def _settled(self, settle: Any, worker: str, delivery_id: int) -> bool:
        broker_id = self._broker_delivery.get(delivery_id)
        if broker_id is None:  # a delivery id no claim returned: refused, as it must be
            broker_id = -1 - delivery_id if isinstance(delivery_id, int) else -1
        try:
            receipt = await settle(worker, broker_id)
        except SettlementRejected:
            return False
        return not receipt.duplicate

    async def reap_expired(self, now: int) -> int:
        raise UnsupportedFixtureOp("reap_expired at a fixture time needs logical_time")

    def pending(self) -> list[dict[str, Any]]:
        return [{**item.to_dict(), "item_id": self._item(item.item_id)}
                for item in self.cell.pending()]

    def in_flight(self) -> list[dict[str, Any]]:
        return sorted((self._delivery(d) for d in self.cell.in_flight()),
                      key=lambda d: d["delivery_id"])

    def dead_letters(self) -> list[dict[str, Any]]:
        return [{**letter.to_dict(), "item_id": self._item(letter.item_id)}
                for letter in self.cell.dead_letters()]


class BrokerBackend(Backend):
    """Models on the broker at :attr:`url` (set by the CLI's ``--url``)."""

    flavors = ("async",)

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.lacks = NATS_LACKS if kind == "nats" else LACKS
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
        storage = self.provider.work_queue(
            self._name("w"), visibility_timeout=initial.visibility_timeout * TIME_UNIT,
            max_deliveries=initial.max_deliveries)
        cell = WorkQueueCell(storage, context=Context(name="conformance"))
        await storage.sync()
        return BrokerWorkQueueAdapter(cell, initial.visibility_timeout)

    async def cluster_op(self, op: Mapping[str, Any]) -> None:
        raise UnsupportedFixtureOp(
            f"backend {self.kind!r} performs no cluster op ({op.get('type')!r}): the "
            "broker's own replication is not driven from here")


register_backend("nats", lambda: BrokerBackend("nats"))
register_backend("redis", lambda: BrokerBackend("redis"))
