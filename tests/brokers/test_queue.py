"""QueueCell over the broker storages: FIFO, bounds, close, readers kept current."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from lazily_queue import EMPTY, QueueCell, QueueClosed, QueuePopError, QueuePushError
from lazily_queue.client.brokers import open_provider
from lazily_queue.reactive import wait_until

from .conftest import fresh


async def test_fifo_pop_and_poll_many(provider: Any) -> None:
    q: QueueCell[Any] = QueueCell(provider.queue(fresh("fifo")))
    for value in ["a", {"b": [1, 2]}, 3, None]:
        await q.push(value)
    assert await q.pop() == "a"
    assert await q.poll_many(10) == [{"b": [1, 2]}, 3, None]
    assert await q.poll() is QueuePopError.Empty
    await q.storage.sync()  # type: ignore[attr-defined]
    assert q.len() == 0 and q.is_empty() and q.head() is EMPTY


async def test_bounded_queue_refuses_when_full_and_readers_follow(provider: Any) -> None:
    q: QueueCell[Any] = QueueCell(provider.queue(fresh("bounded"), capacity=2))
    assert await q.offer(1) is None
    assert await q.offer(2) is None
    assert await q.offer(3) is QueuePushError.Full
    assert q.len() == 2 and q.is_full() and q.head() == 1
    assert await q.pop() == 1
    await wait_until(lambda: not q.is_full(), context=q.ctx, timeout=10)
    assert await q.offer(3) is None


async def test_close_refuses_pushes_and_drains(provider: Any) -> None:
    q: QueueCell[Any] = QueueCell(provider.queue(fresh("close")))
    await q.push("last")
    await q.close()
    assert q.is_closed()
    assert await q.offer("late") is QueuePushError.Closed
    assert await q.pop() == "last"
    with pytest.raises(QueueClosed):
        await q.pop(timeout=10)


async def test_a_waiting_pop_wakes_on_another_clients_push(broker_url: str) -> None:
    """The readers follow changes made by another connection (notifications)."""
    name = fresh("wake")
    first = await open_provider(broker_url, poll_interval=30.0)
    second = await open_provider(broker_url, poll_interval=30.0)
    try:
        consumer: QueueCell[Any] = QueueCell(first.queue(name))
        producer: QueueCell[Any] = QueueCell(second.queue(name))
        await consumer.storage.sync()  # type: ignore[attr-defined]
        popping = asyncio.ensure_future(consumer.pop(timeout=20))
        await asyncio.sleep(0)
        await producer.push("hello")
        assert await popping == "hello"
        await producer.push("again")
        await wait_until(lambda: consumer.len() == 1, context=consumer.ctx, timeout=20)
    finally:
        await first.close()
        await second.close()


async def test_readers_follow_another_clients_pops_and_claims(broker_url: str) -> None:
    """Pops and claims by another connection reach this one's readers (announced:
    polling alone would take 30 s here)."""
    from lazily_queue import WorkQueueCell

    first = await open_provider(broker_url, poll_interval=30.0)
    second = await open_provider(broker_url, poll_interval=30.0)
    try:
        name = fresh("follow")
        watcher: QueueCell[Any] = QueueCell(first.queue(name))
        popper: QueueCell[Any] = QueueCell(second.queue(name))
        await popper.push_many(["a", "b"])
        await wait_until(lambda: watcher.len() == 2, context=watcher.ctx, timeout=20)
        assert await popper.pop() == "a"
        await wait_until(lambda: watcher.len() == 1, context=watcher.ctx, timeout=20)
        jobs = WorkQueueCell(first.work_queue(name, visibility_timeout=60, max_deliveries=3))
        worker = WorkQueueCell(second.work_queue(name, visibility_timeout=60,
                                                 max_deliveries=3))
        await jobs.push("job")
        await wait_until(lambda: jobs.pending_len() == 1, context=jobs.ctx, timeout=20)
        delivery = await worker.claim("w", timeout=20)
        # Another connection's live lease may still count as pending here (on NATS it
        # comes back to any worker when it expires), so the settlement is what must
        # reach this connection's readers.
        await worker.ack("w", delivery.delivery_id)
        await wait_until(lambda: (jobs.pending_len(), jobs.in_flight_len()) == (0, 0),
                         context=jobs.ctx, timeout=20)
    finally:
        await first.close()
        await second.close()


async def test_items_gives_back_prefetched_elements(provider: Any) -> None:
    q: QueueCell[Any] = QueueCell(provider.queue(fresh("items")))
    await q.push_many(range(5))
    seen = []
    async with contextlib.aclosing(q.items(prefetch=4)) as items:
        async for value in items:
            seen.append(value)
            if len(seen) == 2:
                break
    rest: list[Any] = []
    while len(rest) < 3:
        rest += await q.pop_many(10, timeout=10)
    assert seen == [0, 1]
    assert sorted(rest) == [2, 3, 4]  # on JetStream the returned ones go to the tail
