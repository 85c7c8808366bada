"""The cell adapters of the ``local`` conformance backend and the :class:`Invoker` that
issues each op in the configured flavor (see :mod:`.local`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from ..cells.queue import QueueCell
from ..cells.topic import TopicCell
from ..cells.work_queue import WorkQueueCell
from ..core.queue import QueuePopError, QueuePushError
from ..core.scheduling import RetryPolicy
from ..core.work import Receipt
from ..errors import LimitExceeded, SettlementRejected
from ..raft.errors import ProposalRejected
from ..reactive import Slot
from ..storage.local import VecDequeStorage
from ..storage.raft_limited import LimitedRaftWorkQueueStorage
from ..storage.raft_work_queue import RaftWorkQueueStorage
from ..threads import LoopBridge
from ..transactions import Transaction, transaction
from . import transactions
from .backend import QueueAdapter, TopicAdapter, WorkQueueAdapter
from .groups import group_op, group_states, open_group
from .queue import limits_of_fixture

T = TypeVar("T")


class Invoker:
    """Issues one op in the configured flavor and returns its result."""

    def __init__(self, flavor: str) -> None:
        self.flavor = flavor
        self._bridge = LoopBridge() if flavor == "threadsafe" else None

    async def __call__(
        self, sync: Callable[..., T], asynchronous: Callable[..., Awaitable[T]], *args: Any
    ) -> T:
        if self._bridge is not None:
            return await asyncio.to_thread(self._bridge.call, sync, *args)
        if self.flavor == "async":
            return await asynchronous(*args)
        return sync(*args)

    async def sync_only(self, fn: Callable[..., T], *args: Any) -> T:
        """Call ``fn`` on the loop thread (threadsafe: through the bridge)."""
        if self._bridge is not None:
            return await asyncio.to_thread(self._bridge.call, fn, *args)
        return fn(*args)


class LocalQueueAdapter(QueueAdapter):
    def __init__(self, cell: QueueCell[Any], invoke: Invoker,
                 tx: Callable[[], Transaction] = transaction) -> None:
        self.cell = cell
        self._invoke = invoke
        self._tx = tx

    async def transaction(self, ops: list[Mapping[str, Any]]) -> Any:
        return await transactions.run(self._tx, self.cell, ops)

    def readers(self) -> Mapping[str, Slot[Any]]:
        return self.cell.readers()

    def elements(self) -> list[Any]:
        storage = self.cell.storage
        if not isinstance(storage, VecDequeStorage):
            raise TypeError(f"{type(storage).__name__} has no elements() snapshot")
        return storage.elements()

    async def try_push(self, value: Any, msg_id: str | None = None,
                       ttl: float | None = None) -> QueuePushError | None:
        cell = self.cell
        if msg_id is not None or ttl is not None:  # the synchronous core takes neither
            return await cell.offer(value, msg_id=msg_id, ttl=ttl)
        return await self._invoke(cell.try_push, cell.offer, value)

    def expired(self) -> int:
        return self.cell.expired()

    async def try_pop(self) -> Any:
        cell = self.cell
        return await self._invoke(cell.try_pop, cell.poll)

    async def close(self) -> None:
        cell = self.cell
        await self._invoke(cell.try_close, cell.close)

    async def push_headers(self, value: Any, headers: Any,
                           msg_id: str | None = None) -> QueuePushError | None:
        return await self.cell.offer(value, msg_id=msg_id, headers=headers)

    async def push_options(self, value: Any, options: Mapping[str, Any]) -> Any:
        return await self.cell.offer(value, **options)

    def delayed_len(self) -> int:
        return self.cell.delayed_len()

    async def poll_messages(self, n: int, give_back: int) -> Any:
        taken = await self.cell.poll_messages(n)
        if isinstance(taken, QueuePopError):
            return taken
        kept = len(taken) - min(give_back, len(taken))
        if kept < len(taken):
            await self.cell.give_back(taken[kept:])
        return [{"id": m.id, "value": m.value, **({"headers": dict(m.headers)} if m.headers
                                                  else {})} for m in taken[:kept]]

    async def push_batch(self, values: list[Any]) -> list[QueuePushError | None]:
        cell = self.cell

        def pushes() -> list[QueuePushError | None]:
            with cell.ctx.batch():
                return [cell.try_push(v) for v in values]

        async def offers() -> list[QueuePushError | None]:
            # Local offers never suspend, so the batch stays one synchronous block.
            with cell.ctx.batch():
                return [await cell.offer(v) for v in values]

        return await self._invoke(pushes, offers)


class LocalTopicAdapter(TopicAdapter):
    def __init__(self, cell: TopicCell[Any], invoke: Invoker,
                 tx: Callable[[], Transaction] = transaction, lease_unit: float = 1.0) -> None:
        self.cell = cell
        self._invoke = invoke
        self._tx = tx
        self.lease_unit = lease_unit

    async def transaction(self, ops: list[Mapping[str, Any]]) -> Any:
        return await transactions.run(self._tx, self.cell, ops)

    async def subscribe_at(self, subscriber: str, durability: str, start: Any) -> Any:
        cell = self.cell
        if self._invoke.flavor == "async":
            return await cell.subscribe(subscriber, durability, start=start)
        return await self._invoke.sync_only(
            lambda: cell.try_subscribe(subscriber, durability, start=start))

    async def seek(self, subscriber: str, offset: Any) -> Any:
        return await self._invoke(self.cell.try_seek, self.cell.seek, subscriber, offset)

    async def group_op(self, op: Mapping[str, Any], settings: Mapping[str, Any]) -> Any:
        return await group_op(self.cell, op, settings, self.lease_unit)

    def groups(self, settings: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        return group_states(self.cell, settings, self.lease_unit)

    def group_expired(self, settings: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
        return {name: open_group(self.cell, name, spec, self.lease_unit).expired()
                for name, spec in settings.items()}

    def reader(self, subscriber: str) -> Slot[Any]:
        return self.cell.reader(subscriber)

    async def publish(self, value: Any, msg_id: str | None = None) -> Any:
        if msg_id is not None:
            return await self.cell.publish(value, msg_id=msg_id, wait=False)
        return await self._invoke(self.cell.try_publish, self._publish_now, value)

    async def _publish_now(self, value: Any) -> Any:
        return await self.cell.publish(value, wait=False)  # a reject topic: never waits

    async def publish_headers(self, value: Any, headers: Any,
                              msg_id: str | None = None, ttl: float | None = None) -> Any:
        return await self.cell.publish(value, msg_id=msg_id, headers=headers, ttl=ttl,
                                       wait=False)

    async def read_messages(self, subscriber: str) -> Any:
        cell = self.cell
        unread = cell.read_stream(subscriber)
        if unread is None:
            return None
        first = cell.subscriptions()[subscriber]["cursor"]
        out = []
        for offset, value in enumerate(unread, first):
            headers = cell.headers_of(offset)
            out.append({"id": offset, "value": value,
                        **({"headers": dict(headers)} if headers else {})})
        return out

    async def subscribe(self, subscriber: str, durability: str) -> Any:
        cell = self.cell
        return await self._invoke(cell.try_subscribe, cell.subscribe, subscriber, durability)

    async def reconnect(self, subscriber: str) -> Any:
        return await self._invoke(self.cell.try_reconnect, self.cell.reconnect, subscriber)

    async def disconnect(self, subscriber: str) -> Any:
        return await self._invoke(self.cell.try_disconnect, self.cell.disconnect, subscriber)

    async def delete_subscriber(self, subscriber: str) -> bool:
        cell = self.cell
        return bool(await self._invoke(cell.try_delete_subscriber, cell.delete_subscriber,
                                       subscriber))

    async def advance(self, subscriber: str) -> Any:
        return await self._invoke(self.cell.try_advance, self.cell.poll, subscriber)

    async def gc(self) -> int:
        return await self._invoke(self.cell.try_gc, self.cell.gc)

    def base_offset(self) -> int:
        return self.cell.base_offset()

    def elements(self) -> list[Any]:
        return self.cell.elements()

    def subscriptions(self) -> dict[str, dict[str, Any]]:
        return self.cell.subscriptions()

    def read_stream(self, subscriber: str) -> list[Any] | None:
        return self.cell.read_stream(subscriber)


class LocalWorkQueueAdapter(WorkQueueAdapter):
    """``time_scale``: seconds per fixture time unit as the cell's backend counts a delay
    (1 locally; 0.001 over Raft, whose fixture times are the replicated milliseconds)."""

    def __init__(self, cell: WorkQueueCell, invoke: Invoker,
                 tx: Callable[[], Transaction] = transaction, *,
                 time_scale: float = 1.0) -> None:
        self.cell = cell
        self.time_scale = time_scale
        self._invoke = invoke
        self._tx = tx

    async def transaction(self, ops: list[Mapping[str, Any]]) -> Any:
        return await transactions.run(self._tx, self.cell, ops)

    def readers(self) -> Mapping[str, Slot[Any]]:
        return self.cell.readers()

    async def declare(self, config: Mapping[str, Any]) -> str | None:
        """Over Raft a second storage of the queue declares it on the cluster (refused
        ``config_mismatch`` unless its configuration is the same); locally, where a
        cell owns its queue, the same comparison."""
        retry = None if config.get("retry") is None else RetryPolicy.from_list(config["retry"])
        limits = None if config.get("limits") is None else limits_of_fixture(config["limits"])
        storage: Any = self.cell.storage
        if isinstance(storage, RaftWorkQueueStorage):
            args = (storage._driver, storage._view, storage.name)
            vt, most = config["visibility_timeout"], config["max_deliveries"]
            other = (RaftWorkQueueStorage(*args, visibility_timeout=vt, max_deliveries=most,
                                          retry=retry) if limits is None
                     else LimitedRaftWorkQueueStorage(*args, visibility_timeout=vt,
                                                      max_deliveries=most, retry=retry,
                                                      limits=limits))
            try:
                await other.declare()
            except ProposalRejected as exc:
                if not str(exc).startswith("config_mismatch:"):
                    raise
                return "Mismatch"
            return None
        same = (self.cell.visibility_timeout, self.cell.max_deliveries,
                storage.core.retry, self.cell.limits())
        return None if same == (config["visibility_timeout"], config["max_deliveries"],
                                retry, limits) else "Mismatch"

    async def push(self, value: Any, msg_id: str | None = None) -> int:
        """The ``item_id``; a push a work queue's limits refuse raises ``LimitExceeded``
        (never waits for room)."""
        if msg_id is not None:
            return await self.cell.push(value, msg_id=msg_id, wait=False)
        return await self._invoke(self.cell.try_push, self._push_now, value)

    async def _push_now(self, value: Any) -> int:
        return await self.cell.push(value, wait=False)

    async def push_scheduled(self, value: Any, priority: int, delay: int | None,
                             now: int | None) -> int:
        """A push its limits refuse raises ``LimitExceeded`` (never waits for room)."""
        wait = None if delay is None else self.time_scale * delay
        return await self.cell.push(value, priority=priority, delay=wait,
                                    now=None if now is None else now, wait=False)

    async def push_options(self, value: Any, options: Mapping[str, Any]) -> Any:
        given = {key: options[key] for key in ("msg_id", "headers", "priority", "now")
                 if key in options}
        for key in ("ttl", "delay"):
            if key in options:
                given[key] = self.time_scale * options[key]
        try:
            return await self.cell.push(value, wait=False, **given)
        except LimitExceeded:
            return "Full"

    def expired(self) -> int:
        return self.cell.expired()

    def item_headers(self) -> dict[str, dict[str, str]]:
        cell = self.cell
        ids = sorted({*(p.item_id for p in cell.pending()), *(d.item_id for _, d in
                                                               cell.delayed()),
                      *(d.item_id for d in cell.in_flight()),
                      *(d.item_id for d in cell.dead_letters())})
        return {str(i): dict(h) for i in ids if (h := cell.headers_of(i))}

    async def nack_delayed(self, worker: str, delivery_id: int, delay: int, now: int) -> bool:
        try:
            receipt = await self.cell.nack(worker, delivery_id, delay=delay * self.time_scale,
                                           now=now)
        except SettlementRejected:
            return False
        return not receipt.duplicate

    async def promote_due(self, now: int) -> int:
        return await self.cell.promote_due(now)

    def delayed(self) -> list[dict[str, Any]]:
        return [{"due": due, **item.to_dict()} for due, item in self.cell.delayed()]

    async def claim(self, worker: str, now: int) -> dict[str, Any] | None:
        cell = self.cell
        delivery = await self._invoke(cell.try_claim, cell.poll, worker, now)
        return None if delivery is None else delivery.to_dict()

    async def ack(self, worker: str, delivery_id: int) -> bool:
        cell = self.cell
        return await self._settled(cell.try_ack, cell.ack, worker, delivery_id)

    async def nack(self, worker: str, delivery_id: int) -> bool:
        cell = self.cell
        return await self._settled(cell.try_nack, cell.nack, worker, delivery_id)

    async def _settled(
        self,
        sync: Callable[[str, int], Receipt],
        asynchronous: Callable[[str, int], Awaitable[Receipt]],
        worker: str,
        delivery_id: int,
    ) -> bool:
        """The spec's answer: ``True`` for a settlement made now; ``False`` for a refused
        one or a repeat (a backend's first receipt, marked ``duplicate``)."""
        try:
            receipt = await self._invoke(sync, asynchronous, worker, delivery_id)
        except SettlementRejected:
            return False
        return not receipt.duplicate

    async def reap_expired(self, now: int) -> int:
        return await self._invoke(self.cell.try_reap_expired, self.cell.reap_expired, now)

    def pending(self) -> list[dict[str, Any]]:
        return [item.to_dict() for item in self.cell.pending()]

    def in_flight(self) -> list[dict[str, Any]]:
        return [delivery.to_dict() for delivery in self.cell.in_flight()]

    def dead_letters(self) -> list[dict[str, Any]]:
        return [letter.to_dict() for letter in self.cell.dead_letters()]
